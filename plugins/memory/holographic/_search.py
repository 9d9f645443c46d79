"""Hybrid retrieval: which stored facts answer a query, best first, with real scores.

Candidates are the facts FTS5 matches on any query term, the facts linked to
an entity the query names, and (with HRR) the facts whose vectors are nearest
the query's. Each candidate gets, all in 0..1:

* ``bm25``: FTS5's bm25 over the stemmed terms, divided by the best candidate's;
* ``coverage``: the idf-weighted share of the query's terms the fact contains
  (rare words count more: "billing" beats "service");
* ``jaccard``: shared terms over all terms of query and fact together;
* ``entity``: the share of the query's entities the fact is linked to;
* ``hrr``: the cosine of the query's and the fact's vectors (numpy and ``hrr`` on);
* ``embedding``: the cosine of the query's and the fact's embeddings from the LLM
  endpoint (when it gives them, see :mod:`._embed`), which finds synonyms and
  paraphrases no shared word or trigram links.

The score is their weighted sum (:data:`WEIGHTS_HRR` or :data:`WEIGHTS_PLAIN`,
:data:`WEIGHTS_HRR_EMBEDDING` or :data:`WEIGHTS_PLAIN_EMBEDDING` with embeddings)
times a trust factor from 0.8 (trust 0) to 1.2 (trust 1). ``relevance`` is the
same sum without the ``bm25`` term, which is relative to the other candidates:
it measures how well a fact answers the query on an absolute scale, and is what
:data:`MIN_RELEVANCE` compares with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import _hrr
from ._fact import Fact
from ._store import FactStore
from ._text import entity_key, extract_entities, ngrams, terms

CANDIDATES = 200
"""At most this many facts come from each candidate source."""

HRR_CANDIDATES = 50
HRR_MIN_COSINE = 0.08
"""HRR candidates must be at least this close (unrelated facts sit near 0)."""

WEIGHTS_HRR = {"bm25": 0.25, "coverage": 0.30, "jaccard": 0.10, "entity": 0.10, "hrr": 0.25}
WEIGHTS_PLAIN = {"bm25": 0.30, "coverage": 0.40, "jaccard": 0.15, "entity": 0.15}
WEIGHTS_HRR_EMBEDDING = {
    "bm25": 0.20,
    "coverage": 0.20,
    "jaccard": 0.05,
    "entity": 0.10,
    "hrr": 0.15,
    "embedding": 0.30,
}
WEIGHTS_PLAIN_EMBEDDING = {
    "bm25": 0.20,
    "coverage": 0.30,
    "jaccard": 0.10,
    "entity": 0.10,
    "embedding": 0.30,
}

EMBEDDING_CANDIDATES = 50
EMBEDDING_MIN_COSINE = 0.2
"""Embedding candidates must be at least this close."""

MIN_RELEVANCE = 0.15
"""Below this ``relevance`` a fact is not recalled by prefetch."""

RELATIVE_FLOOR = 0.6
"""Nor is a fact scoring under this share of the best fact's score."""


@dataclass(frozen=True)
class Hit:
    """One ranked fact and how it scored."""

    fact: Fact
    score: float
    relevance: float
    parts: dict[str, float]


@dataclass(frozen=True)
class _Query:
    terms: tuple[str, ...]
    entity_keys: frozenset[str]
    entity_ids: tuple[int, ...]


def _match_expression(query_terms: tuple[str, ...]) -> str:
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms)
    return f"terms : ({quoted})"


def _parse(store: FactStore, text: str) -> _Query:
    query_terms = tuple(terms(text))
    wanted = {entity_key(e) for e in extract_entities(text)} | set(ngrams(text))
    wanted.discard("")
    found: list[tuple[int, str]] = []
    if wanted:
        marks = ",".join("?" * len(wanted))
        found = [
            (int(i), str(n))
            for i, n in store.query(
                f"SELECT id, name FROM entities WHERE name IN ({marks})", sorted(wanted)
            )
        ]
    return _Query(query_terms, frozenset(n for _, n in found), tuple(i for i, _ in found))


def _fts(store: FactStore, query: _Query) -> dict[int, float]:
    if not query.terms:
        return {}
    rows = store.query(
        "SELECT rowid, bm25(facts_fts, 0.0, 1.0) FROM facts_fts WHERE facts_fts MATCH ?"
        " ORDER BY rank LIMIT ?",
        (_match_expression(query.terms), CANDIDATES),
    )
    return {int(r[0]): max(0.0, -float(r[1])) for r in rows}


def _entity_candidates(store: FactStore, query: _Query) -> set[int]:
    if not query.entity_ids:
        return set()
    marks = ",".join("?" * len(query.entity_ids))
    rows = store.query(
        f"SELECT DISTINCT fact_id FROM fact_entities WHERE entity_id IN ({marks}) LIMIT ?",
        (*query.entity_ids, CANDIDATES),
    )
    return {int(r[0]) for r in rows}


def _hrr_scores(store: FactStore, query: _Query) -> dict[int, float]:
    loaded = store.vectors()
    if loaded is None:
        return {}
    ids, matrix = loaded
    vector = _hrr.encode(query.terms, sorted(query.entity_keys))
    if vector is None or not ids:
        return {}
    return dict(zip(ids, _hrr.similarities(vector, matrix), strict=True))


def _embedding_scores(store: FactStore, query_embedding: Any) -> dict[int, float]:
    if query_embedding is None:
        return {}
    loaded = store.embeddings(int(query_embedding.shape[0]))
    if loaded is None:
        return {}  # none stored yet, or only by another model
    ids, matrix = loaded
    return {i: float(s) for i, s in zip(ids, matrix @ query_embedding, strict=True)}


def _idf(store: FactStore, query_terms: tuple[str, ...]) -> dict[str, float]:
    total = store.count()
    docs: dict[str, int] = {}
    if query_terms:
        marks = ",".join("?" * len(query_terms))
        rows = store.query(
            f"SELECT term, doc FROM facts_vocab WHERE col = 'terms' AND term IN ({marks})",
            query_terms,
        )
        docs = {str(t): int(d) for t, d in rows}
    return {
        t: math.log(1.0 + (total - docs.get(t, 0) + 0.5) / (docs.get(t, 0) + 0.5))
        for t in query_terms
    }


def search(
    store: FactStore,
    text: str,
    *,
    limit: int,
    category: str | None = None,
    use_hrr: bool = True,
    query_embedding: Any = None,
) -> list[Hit]:
    """The facts that best answer ``text``, best first, at most ``limit`` of them.

    ``query_embedding`` (a unit float32 vector) adds the ``embedding`` signal.
    """
    query = _parse(store, text)
    embedded = _embedding_scores(store, query_embedding)
    if not query.terms and not query.entity_ids and not embedded:
        return []
    bm25 = _fts(store, query)
    hrr = _hrr_scores(store, query) if use_hrr else {}
    near = sorted((s, i) for i, s in hrr.items() if s >= HRR_MIN_COSINE)[-HRR_CANDIDATES:]
    close = sorted((s, i) for i, s in embedded.items() if s >= EMBEDDING_MIN_COSINE)
    candidates = set(bm25) | _entity_candidates(store, query) | {i for _, i in near}
    candidates |= {i for _, i in close[-EMBEDDING_CANDIDATES:]}
    facts = [f for f in store.facts(sorted(candidates)) if category in (None, f.category)]
    if not facts:
        return []
    idf = _idf(store, query.terms)
    best_bm25 = max(bm25.values(), default=0.0) or 1.0
    if embedded:
        weights = WEIGHTS_HRR_EMBEDDING if hrr else WEIGHTS_PLAIN_EMBEDDING
    else:
        weights = WEIGHTS_HRR if hrr else WEIGHTS_PLAIN
    hits = []
    for fact in facts:
        parts = _parts(fact, query, idf, bm25.get(fact.id, 0.0) / best_bm25)
        if hrr:
            parts["hrr"] = max(0.0, hrr.get(fact.id, 0.0))
        if embedded:
            parts["embedding"] = max(0.0, embedded.get(fact.id, 0.0))
        relevance = sum(w * parts[k] for k, w in weights.items() if k != "bm25")
        relevance /= 1.0 - weights["bm25"]
        base = sum(w * parts[k] for k, w in weights.items())
        score = base * (0.8 + 0.4 * fact.trust)
        hits.append(Hit(fact, round(score, 4), round(relevance, 4), parts))
    hits.sort(key=lambda h: (-h.score, -h.fact.updated_at, -h.fact.id))
    return hits[:limit]


def recall(
    store: FactStore, text: str, *, limit: int, use_hrr: bool = True, query_embedding: Any = None
) -> list[Hit]:
    """What prefetch recalls: :func:`search` without the weak hits (see the floors above)."""
    hits = search(store, text, limit=limit, use_hrr=use_hrr, query_embedding=query_embedding)
    if not hits:
        return []
    floor = hits[0].score * RELATIVE_FLOOR
    return [h for h in hits if h.relevance >= MIN_RELEVANCE and h.score >= floor]


def _parts(fact: Fact, query: _Query, idf: dict[str, float], bm25: float) -> dict[str, float]:
    mine, theirs = set(query.terms), set(fact.terms)
    shared = mine & theirs
    weight = sum(idf.values())
    coverage = sum(idf[t] for t in shared) / weight if weight else 0.0
    union = mine | theirs
    jaccard = len(shared) / len(union) if union else 0.0
    fact_keys = {entity_key(e) for e in fact.entities}
    entity = (
        len(fact_keys & query.entity_keys) / len(query.entity_keys) if query.entity_keys else 0.0
    )
    return {"bm25": bm25, "coverage": coverage, "jaccard": jaccard, "entity": entity}

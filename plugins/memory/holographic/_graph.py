"""Entity-structured recall and memory hygiene: probe, related, reason, contradict.

An entity name given by the model is matched by its key (lower-case, see
:func:`~._text.entity_key`): exactly when such an entity exists, otherwise every
entity whose key contains it (``"tom"`` finds ``Tom`` and ``Tom Baker``).

Contradictions (:func:`contradictions`) are pairs of facts whose content terms
(numbers left out) overlap by a Jaccard of at least :data:`CLOSE_JACCARD` (so
they are about the same thing; the entities they share are reported) and that
differ in one of:

* ``negation``: one says ``not``/``never``/``don't``..., the other does not;
* ``polarity``: one likes (``like``/``love``/``enjoy``/``prefer``), the other
  dislikes (``hate``/``dislike``/``detest``/``can't stand``);
* ``number``: both give numbers and the numbers differ (``9:30`` / ``10:00``);
* ``value``: exactly one content word of each is swapped for another
  (``… colour is blue`` / ``… colour is green``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ._fact import Fact
from ._store import FactStore
from ._text import entity_key, is_negated, numbers, words

CLOSE_JACCARD = 0.5
CONTRADICTION_SCAN = 500
"""At most this many facts (the most recent) are compared pairwise."""

_LIKES = frozenset({"like", "likes", "love", "loves", "enjoy", "enjoys", "prefer", "prefers"})
_DISLIKES = frozenset({"hate", "hates", "dislike", "dislikes", "detest", "detests", "stand"})


def resolve(store: FactStore, name: str) -> list[tuple[int, str]]:
    """``(entity id, display)`` of the entities ``name`` refers to; ``[]`` if none."""
    key = entity_key(name)
    if not key:
        return []
    rows = store.query("SELECT id, display FROM entities WHERE name = ?", (key,))
    if not rows:
        pattern = "%" + key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = store.query(
            "SELECT id, display FROM entities WHERE name LIKE ? ESCAPE '\\' ORDER BY id LIMIT 20",
            (pattern,),
        )
    return [(int(i), str(d)) for i, d in rows]


def _linked(store: FactStore, entity_ids: list[int]) -> dict[int, set[int]]:
    """fact id → the ones of ``entity_ids`` it is linked to."""
    if not entity_ids:
        return {}
    marks = ",".join("?" * len(entity_ids))
    links: dict[int, set[int]] = defaultdict(set)
    for fact_id, entity_id in store.query(
        f"SELECT fact_id, entity_id FROM fact_entities WHERE entity_id IN ({marks})", entity_ids
    ):
        links[int(fact_id)].add(int(entity_id))
    return links


def _ranked(facts: list[Fact], limit: int) -> list[Fact]:
    return sorted(facts, key=lambda f: (-f.trust, -f.updated_at, -f.id))[:limit]


def phrase_matches(store: FactStore, name: str) -> set[int]:
    """The facts whose text names ``name`` as a phrase (linked to it or not)."""
    phrase = " ".join(words(name))
    if not phrase:
        return set()
    rows = store.query(
        "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? LIMIT 200",
        ('content : "' + phrase.replace('"', '""') + '"',),
    )
    return {int(r[0]) for r in rows}


def probe(store: FactStore, name: str, limit: int) -> tuple[list[str], list[Fact]]:
    """Every fact about ``name``: linked to its entity, or naming it as a phrase in its text."""
    entities = resolve(store, name)
    ids = set(_linked(store, [i for i, _ in entities])) | phrase_matches(store, name)
    return [d for _, d in entities], _ranked(store.facts(sorted(ids)), limit)


def related(store: FactStore, name: str, limit: int) -> tuple[list[str], list[dict[str, Any]]]:
    """Entities that share facts with ``name``, most shared first, with those facts."""
    entities = resolve(store, name)
    own = [i for i, _ in entities]
    if not own:
        return [], []
    marks = ",".join("?" * len(own))
    rows = store.query(
        "SELECT e.id, e.display, fe2.fact_id FROM fact_entities fe1"
        " JOIN fact_entities fe2 ON fe2.fact_id = fe1.fact_id"
        " JOIN entities e ON e.id = fe2.entity_id"
        f" WHERE fe1.entity_id IN ({marks}) AND fe2.entity_id NOT IN ({marks})",
        [*own, *own],
    )
    shared: dict[tuple[int, str], set[int]] = defaultdict(set)
    for entity_id, display, fact_id in rows:
        shared[(int(entity_id), str(display))].add(int(fact_id))
    order = sorted(shared.items(), key=lambda kv: (-len(kv[1]), kv[0][1].lower()))[:limit]
    result = [
        {
            "entity": display,
            "shared_facts": len(fact_ids),
            "facts": [f.as_json() for f in _ranked(store.facts(sorted(fact_ids)), 5)],
        }
        for (_, display), fact_ids in order
    ]
    return [d for _, d in entities], result


@dataclass(frozen=True)
class Reasoned:
    facts: list[Fact]
    matched: int
    """How many of the names each returned fact is linked to."""
    unknown: list[str]
    """Names that matched no entity."""


def reason(store: FactStore, names: list[str], limit: int) -> Reasoned:
    """Facts linked to all of ``names``; if none is, those linked to the most of them."""
    owner: dict[int, int] = {}
    unknown = []
    for index, name in enumerate(names):
        found = resolve(store, name)
        if not found:
            unknown.append(name)
        for entity_id, _ in found:
            owner.setdefault(entity_id, index)
    hits: dict[int, set[int]] = {
        fact_id: {owner[e] for e in linked}
        for fact_id, linked in _linked(store, sorted(owner)).items()
    }
    best = max((len(v) for v in hits.values()), default=0)
    ids = sorted(f for f, v in hits.items() if len(v) == best) if best else []
    return Reasoned(_ranked(store.facts(ids), limit), best, unknown)


def _content_terms(fact: Fact) -> set[str]:
    return {t for t in fact.terms if not t.isdigit()}


def _polarity(text: str) -> int:
    found = set(words(text))
    return (1 if found & _LIKES else 0) - (1 if found & _DISLIKES else 0)


def conflict(a: Fact, b: Fact) -> tuple[str, float] | None:
    """``(reason, similarity)`` when ``a`` and ``b`` look contradictory, else None."""
    left, right = _content_terms(a), _content_terms(b)
    union = left | right
    similarity = len(left & right) / len(union) if union else 0.0
    if similarity < CLOSE_JACCARD:
        return None
    if is_negated(a.content) != is_negated(b.content):
        return "negation", similarity
    if _polarity(a.content) * _polarity(b.content) < 0:
        return "polarity", similarity
    left_numbers, right_numbers = numbers(a.content), numbers(b.content)
    if left_numbers and right_numbers and left_numbers != right_numbers:
        return "number", similarity
    if len(left - right) == 1 and len(right - left) == 1:
        return "value", similarity
    return None


def contradictions(store: FactStore, name: str | None, limit: int) -> list[dict[str, Any]]:
    """Pairs of facts that look contradictory (about ``name`` if given), closest first."""
    if name:
        _, facts = probe(store, name, CONTRADICTION_SCAN)
    else:
        facts = store.recent(None, CONTRADICTION_SCAN)
    found: list[dict[str, Any]] = []
    for a, b in combinations(facts, 2):
        shared = {entity_key(e) for e in a.entities} & {entity_key(e) for e in b.entities}
        verdict = conflict(a, b)
        if verdict is None:
            continue
        reason_name, similarity = verdict
        first, second = sorted((a, b), key=lambda f: f.id)
        found.append(
            {
                "reason": reason_name,
                "similarity": round(similarity, 3),
                "shared_entities": sorted(shared),
                "facts": [first.as_json(), second.as_json()],
            }
        )
    found.sort(key=lambda p: (-p["similarity"], p["facts"][0]["id"], p["facts"][1]["id"]))
    return found[:limit]

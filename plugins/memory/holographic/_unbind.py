"""probe, related and reason answered by unbinding the person's bank (see :mod:`._algebra`).

They return what :mod:`._graph`'s joins return, so the tools' JSON is the same
whichever answers:

* **probe**: the facts whose binding holds the entity: the name's own key and
  the keys of the known entities it refers to (:func:`~._graph.resolve`) are
  each unbound from the bank, and a fact that scores :data:`~._algebra.MATCH`
  for one of them is about it; facts naming it as a phrase in their text
  (unlinked mentions) come too, as with the join, after the bound ones.
* **related**: for each fact about the entity, its other fillers are read back
  by unbinding its content from the bank and cleaning up against the known
  entities; entities are ranked by how many such facts they share.
* **reason**: each name is probed; a fact counts the names it is bound to,
  those bound to the most names are returned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from ._algebra import MATCH, Bank, entity_atoms
from ._fact import Fact
from ._graph import Reasoned, phrase_matches, resolve
from ._store import FactStore
from ._text import entity_key


def _keys(store: FactStore, name: str) -> tuple[list[tuple[int, str]], list[str]]:
    """The entities ``name`` resolves to and every key to unbind (its own first)."""
    entities = resolve(store, name)
    keys = [entity_key(name)]
    if entities:
        names = dict(
            store.query(
                f"SELECT id, name FROM entities WHERE id IN ({','.join('?' * len(entities))})",
                [i for i, _ in entities],
            )
        )
        keys += [str(names[i]) for i, _ in entities if i in names]
    return entities, [k for k in dict.fromkeys(keys) if k]


def _scores(bank: Bank, keys: list[str]) -> dict[int, float]:
    """Each fact's best score over ``keys``, for the facts bound to one of them."""
    best: dict[int, float] = {}
    for key in keys:
        for fact_id, score in bank.probe(key, MATCH).items():
            if score > best.get(fact_id, 0.0):
                best[fact_id] = score
    return best


def _ranked(facts: list[Fact], bound: Collection[int], limit: int) -> list[Fact]:
    """Bound facts before mere mentions, then as the joins rank (trust, then recency)."""
    return sorted(facts, key=lambda f: (f.id not in bound, -f.trust, -f.updated_at, -f.id))[:limit]


def probe(store: FactStore, bank: Bank, name: str, limit: int) -> tuple[list[str], list[Fact]]:
    """Every fact about ``name``: bound to it in the bank, or naming it in its text."""
    entities, keys = _keys(store, name)
    scores = _scores(bank, keys)
    ids = set(scores) | phrase_matches(store, name)
    return [d for _, d in entities], _ranked(store.facts(sorted(ids)), scores, limit)


def related(
    store: FactStore, bank: Bank, name: str, limit: int
) -> tuple[list[str], list[dict[str, Any]]]:
    """Entities bound in the same facts as ``name``, most shared first, with those facts."""
    entities, keys = _keys(store, name)
    if not entities:
        return [], []
    vocabulary = {str(k): str(d) for k, d in store.query("SELECT name, display FROM entities")}
    own = set(keys)
    others = [k for k in vocabulary if k not in own]
    atoms = entity_atoms(others)
    shared: dict[str, set[int]] = defaultdict(set)
    for fact_id in _scores(bank, keys):
        for key, score in zip(others, bank.entities_of(fact_id, atoms), strict=False):
            if score >= MATCH:
                shared[key].add(fact_id)
    order = sorted(shared.items(), key=lambda kv: (-len(kv[1]), vocabulary[kv[0]].lower()))
    result = [
        {
            "entity": vocabulary[key],
            "shared_facts": len(fact_ids),
            "facts": [
                f.as_json()
                for f in sorted(
                    store.facts(sorted(fact_ids)), key=lambda f: (-f.trust, -f.updated_at, -f.id)
                )[:5]
            ],
        }
        for key, fact_ids in order[:limit]
    ]
    return [d for _, d in entities], result


def reason(store: FactStore, bank: Bank, names: list[str], limit: int) -> Reasoned:
    """Facts bound to all of ``names``; if none is, those bound to the most of them."""
    hits: dict[int, set[int]] = defaultdict(set)
    unknown = []
    for index, name in enumerate(names):
        entities, keys = _keys(store, name)
        scores = _scores(bank, keys)
        if not entities and not scores:
            unknown.append(name)
        for fact_id in scores:
            hits[fact_id].add(index)
    best = max((len(v) for v in hits.values()), default=0)
    ids = sorted(f for f, v in hits.items() if len(v) == best) if best else []
    return Reasoned(_ranked(store.facts(ids), hits, limit), best, unknown)

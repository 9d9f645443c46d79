"""Role–filler binding of facts and the unbinding that answers probe, related and reason.

Each fact gets a *binding*: for every entity ``e`` it names, the entity's atom
bound to the entity role, bound to the fact's content atom bound to the
content role::

    binding(f) = Σ_e (entity:e ⊛ role:entity) ⊛ (content:f ⊛ role:content)

``content:f`` is the atom of the fact's normalised content, so two facts never
share it. A person's *bank* is the superposition (sum) of their facts'
bindings, in shards of at most :data:`SHARD_PAIRS` bound pairs: a sum of phase
vectors of ``DIM`` elements holds a few dozen pairs before the cross-talk of
the others drowns one out, so the bank is split to keep every probe clean.

Unbinding (multiplying by the conjugate, the exact inverse of binding for
phase vectors) answers the structured queries from the bank alone:

* unbinding ``entity:e ⊛ role:entity ⊛ role:content`` from a shard leaves the
  sum of the content atoms of that shard's facts about ``e`` plus noise; a
  fact's score is the cosine of what is left with its content atom: about 1
  when it names ``e``, about 0 (noise ``sqrt(pairs / 2·DIM)``) when not;
* unbinding ``content:f ⊛ role:content ⊛ role:entity`` leaves the sum of the
  atoms of the entities ``f`` names, which a clean-up against the known
  entities' atoms reads back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ._hrr import DIM, ENTITY_ROLE, _np, atom, bind

if TYPE_CHECKING:
    from ._hrr import Matrix, Vector

CONTENT_ROLE = "role:content"

SHARD_PAIRS = 8
"""Bound (entity, fact) pairs per bank shard: the noise of a probe is about
``sqrt(pairs / 2·DIM)`` ≈ 0.09 against a signal of 1 (a fact naming more
entities than this has a shard to itself)."""

MATCH = 0.5
"""A fact (or entity) whose unbound score reaches this is taken as bound to the key."""


def unbind(memory: Vector, key: Vector) -> Vector:
    """The inverse of :func:`~._hrr.bind` for phase vectors: multiply by the conjugate."""
    result: Vector = memory * _np().conj(key)
    return result


def entity_atom(key: str) -> Vector:
    """The filler of an entity (by its :func:`~._text.entity_key`)."""
    return atom(f"entity:{key}")


def content_atom(norm: str) -> Vector:
    """The filler of a fact's content (by its normalised content)."""
    return atom(f"content:{norm}")


@lru_cache(maxsize=1)
def _both_roles() -> Vector:
    both: Vector = bind(atom(ENTITY_ROLE), atom(CONTENT_ROLE))
    both.setflags(write=False)
    return both


def binding(norm: str, entity_keys: Sequence[str]) -> Vector | None:
    """A fact's role–filler binding; None when it names no entity (nothing to bind)."""
    keys = sorted(set(entity_keys))
    if not keys:
        return None
    np = _np()
    entities = np.sum([entity_atom(k) for k in keys], axis=0)
    result: Vector = (entities * content_atom(norm) * _both_roles()).astype(np.complex64)
    return result


@dataclass(frozen=True)
class Bank:
    """One person's facts as shards of superposed bindings, with what unbinding needs."""

    ids: tuple[int, ...]
    """Fact ids, in the order of ``contents``."""
    shard_of: tuple[int, ...]
    """The shard each fact's binding is summed into."""
    shards: Matrix
    """One row per shard: the sum of its facts' bindings."""
    contents: Matrix
    """One row per fact: its content atom."""

    def probe(self, key: str, floor: float = -1.0) -> dict[int, float]:
        """The score for entity ``key`` of every fact scoring ``floor`` or more: the entity
        unbound from the fact's shard, compared with the fact's content atom."""
        if not self.ids:
            return {}
        np = _np()
        cue = entity_atom(key) * _both_roles()
        left = (self.shards * np.conj(cue)).astype(np.complex64)  # Σ content atoms per shard
        # Re<left, content> is the dot product of the interleaved real views
        rows = left.view(np.float32)[np.asarray(self.shard_of)]
        scores = np.einsum("ij,ij->i", rows, self.contents.view(np.float32)) / DIM
        return {self.ids[i]: float(scores[i]) for i in np.flatnonzero(scores >= floor)}

    def entities_of(self, fact_id: int, atoms: Matrix) -> list[float]:
        """How strongly each entity atom (the rows of ``atoms``, see :func:`entity_atoms`)
        is bound as a filler of fact ``fact_id``: about 1 when it is, 0 when not."""
        if fact_id not in self.ids or atoms.shape[0] == 0:
            return []
        np = _np()
        index = self.ids.index(fact_id)
        cue = self.contents[index] * _both_roles()
        left = self.shards[self.shard_of[index]] * np.conj(cue)  # ≈ Σ the fact's entity atoms
        return [float(s) for s in np.real(atoms.conj() @ left) / DIM]


def entity_atoms(keys: Sequence[str]) -> Matrix:
    """The atoms of the entities ``keys``, as the rows of one matrix."""
    np = _np()
    if not keys:
        return np.zeros((0, DIM), dtype=np.complex64)  # type: ignore[no-any-return]
    return np.vstack([entity_atom(k) for k in keys])  # type: ignore[no-any-return]


def pairs(vector: Vector) -> int:
    """How many bound pairs a binding sums: n random phasors have a mean square of n."""
    np = _np()
    return max(1, round(float(np.vdot(vector, vector).real) / DIM))


def build_bank(facts: Sequence[tuple[int, str, Vector]]) -> Bank:
    """The bank of ``(fact id, normalised content, binding)``, shard by shard in id order."""
    np = _np()
    ordered = sorted(facts, key=lambda f: f[0])
    shard_of: list[int] = []
    shard, held = 0, 0
    for _, _, vector in ordered:
        count = pairs(vector)
        if held and held + count > SHARD_PAIRS:
            shard, held = shard + 1, 0
        shard_of.append(shard)
        held += count
    shards = np.zeros((shard + 1, DIM), dtype=np.complex128)
    for (_, _, vector), index in zip(ordered, shard_of, strict=True):
        shards[index] += vector
    contents = np.ascontiguousarray(
        np.vstack([content_atom(norm) for _, norm, _ in ordered])
        if ordered
        else np.zeros((0, DIM), dtype=np.complex64),
        dtype=np.complex64,
    )
    return Bank(tuple(f[0] for f in ordered), tuple(shard_of), shards, contents)

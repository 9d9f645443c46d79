"""Holographic reduced representations of facts, with random phase vectors (needs numpy).

Every atom (a search term, an entity, a role) is a vector of ``DIM`` unit
complex numbers ``exp(iθ)`` whose phases come from a generator seeded by the
sha256 of the atom's name, so the same atom has the same vector in every
process and on every machine (Python's ``hash`` is salted and never used).

* A term's vector is its own atom plus, at half weight, the bundled atoms of
  its character trigrams (``#pr``, ``pro``, ``rog``...), so word forms the
  stemmer misses (``allergies`` / ``allergic``) still land near each other.
* Binding (``⊛``) multiplies phases element-wise; it turns an entity's atom
  into a different, unrelated vector for the role "entity of this fact".
* A fact's vector is the normalised bundle (sum) of its term vectors and its
  entity atoms bound to the entity role.

The similarity of a query and a fact is the cosine of their vectors (the real
part of the normalised complex inner product). Vectors are stored as
``complex64`` bytes so queries never re-encode facts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.complex64]
    Matrix = npt.NDArray[np.complex64]

DIM = 512
"""Vector length: the cross-talk of unrelated atoms is about ``1/sqrt(DIM)``."""

GRAM_WEIGHT = 0.5
"""How much a term's trigrams count beside the term's own atom."""

ENTITY_ROLE = "role:entity"


@lru_cache(maxsize=1)
def numpy_available() -> bool:
    """Whether numpy can be imported here (tried once per process)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _np() -> Any:
    import numpy

    return numpy


def _seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


@lru_cache(maxsize=8192)
def atom(name: str) -> Vector:
    """The random phase vector of ``name``: deterministic, unit modulus in every element."""
    np = _np()
    phases = np.random.default_rng(_seed(name)).uniform(0.0, 2 * np.pi, DIM)
    vector: Vector = np.exp(1j * phases).astype(np.complex64)
    vector.setflags(write=False)
    return vector


def bind(left: Vector, right: Vector) -> Vector:
    """Circular-convolution binding, which for phase vectors is element-wise multiplication."""
    result: Vector = left * right
    return result


def _trigrams(term: str) -> list[str]:
    padded = f"#{term}#"
    return [padded[i : i + 3] for i in range(len(padded) - 2)]


@lru_cache(maxsize=8192)
def term_vector(term: str) -> Vector:
    """A term's atom plus its trigrams' bundle at :data:`GRAM_WEIGHT`, normalised."""
    np = _np()
    own = atom(f"term:{term}")
    grams = _trigrams(term)
    if len(grams) <= 1:
        return own
    bundle = np.sum([atom(f"gram:{g}") for g in grams], axis=0)
    bundle /= np.linalg.norm(bundle) or 1.0
    vector: Vector = (own / np.sqrt(DIM) + GRAM_WEIGHT * bundle).astype(np.complex64)
    vector /= np.linalg.norm(vector)
    vector.setflags(write=False)
    return vector


def encode(terms: Sequence[str], entities: Sequence[str]) -> Vector | None:
    """The normalised bundle of ``terms`` and of ``entities`` bound to the entity role."""
    np = _np()
    parts = [term_vector(t) for t in terms]
    role = atom(ENTITY_ROLE)
    parts += [bind(atom(f"entity:{e}"), role) / np.sqrt(DIM) for e in entities]
    if not parts:
        return None
    total = np.sum(parts, axis=0)
    norm = float(np.linalg.norm(total))
    if norm == 0.0:
        return None
    vector: Vector = (total / norm).astype(np.complex64)
    return vector


def to_bytes(vector: Vector) -> bytes:
    return bytes(vector.astype("<c8").tobytes())


def from_bytes(data: bytes) -> Vector | None:
    """A stored vector; None when it has the wrong size (another ``DIM``)."""
    if len(data) != DIM * 8:
        return None
    vector: Vector = _np().frombuffer(data, dtype="<c8").astype(_np().complex64)
    return vector


def stack(vectors: Sequence[Vector]) -> Matrix:
    """Vectors as the rows of one matrix, for :func:`similarities`."""
    np = _np()
    if not vectors:
        return np.zeros((0, DIM), dtype=np.complex64)  # type: ignore[no-any-return]
    return np.vstack(vectors)  # type: ignore[no-any-return]


def similarities(query: Vector, matrix: Matrix) -> list[float]:
    """The cosine of ``query`` with every row of ``matrix`` (rows and query are unit length)."""
    if matrix.shape[0] == 0:
        return []
    np = _np()
    # Re<a, conj(b)> is the dot product of the interleaved real views; a float32 product
    # is also far faster than numpy's complex one.
    rows = np.ascontiguousarray(matrix).view(np.float32)
    scores = rows @ np.ascontiguousarray(query).view(np.float32)
    return [float(s) for s in scores]

"""Hypothesis strategies for raw platform payloads: a valid template, bent out of shape."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "\ud800", "\x00", "/admin users", "0", "-1", "1e309"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*prefix, index))
    return found


@st.composite
def bent(draw: st.DrawFn, template: dict[str, Any]) -> Any:
    """``template`` with a few of its values replaced by anything JSON, or removed;
    now and then something else altogether."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON)
    data = copy.deepcopy(template)
    paths = _paths(data)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        parent: Any = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict) and draw(st.booleans()):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(JSON)
        except (KeyError, IndexError, TypeError):
            continue
    return data

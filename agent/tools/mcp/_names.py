"""The names the model sees: ``<server>__<tool>``, valid as an OpenAI function name.

A character outside ``[a-zA-Z0-9_-]`` becomes ``_``; a name longer than 64 is cut.
When two tools end up with one name (``a.b`` and ``a_b``, or two long names cut
alike), the later one gets a short suffix made from its original name, so it
keeps the same name from one listing to the next.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_NAME", "SEPARATOR", "namespaced"]

MAX_NAME = 64
SEPARATOR = "__"
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def _clean(text: str) -> str:
    return _INVALID.sub("_", text) or "_"


def _suffixed(base: str, original: str, attempt: int) -> str:
    digest = hashlib.sha256(f"{original}#{attempt}".encode()).hexdigest()[:6]
    return f"{base[: MAX_NAME - 7]}-{digest}"


def namespaced(server: str, tools: Iterable[str], taken: set[str]) -> dict[str, str]:
    """Model-facing name → the server's tool name, for ``tools`` of ``server``; adds the
    names to ``taken`` (names other servers already use)."""
    names: dict[str, str] = {}
    for tool in tools:
        base = f"{_clean(server)}{SEPARATOR}{_clean(tool)}"[:MAX_NAME]
        name, attempt = base, 0
        while name in taken:
            attempt += 1
            name = _suffixed(base, f"{server}/{tool}", attempt)
        taken.add(name)
        names[name] = tool
    return names

"""Whether message and memory text may appear in log lines.

It may not, except at DEBUG with ``CHORUS_LOG_CONTENT=1`` (the entry point sets
that with ``enable``). Code that would log a text logs ``loggable(text)``:
the text itself when allowed, else only its length.
"""

from __future__ import annotations

_enabled = False


def enable(flag: bool) -> None:
    global _enabled
    _enabled = flag


def enabled() -> bool:
    return _enabled


def loggable(text: object) -> str:
    """``text`` for a DEBUG line: itself when content logging is on, else ``<N chars>``."""
    value = text if isinstance(text, str) else repr(text)
    return value if _enabled else f"<{len(value)} chars>"

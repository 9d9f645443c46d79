"""What every primitive shares: key names, the time source of the Lua scripts.

Keys: everything lives under one prefix (``"chorus:"`` by default) so several
deployments can share a Redis and an operator can find, count and delete the
gateway's keys. A key is ``prefix + kind + ":" + parts``; every part but the
last has ``%`` and ``:`` percent-escaped, so ``("a:b", "c")`` and ``("a", "b:c")``
never name the same key, while the common case (ids without colons) stays
readable in ``redis-cli``.

Time: replicas on different machines have skewed clocks, so scripts read the
time of the Redis server (``redis.call('TIME')``) and all replicas agree on when
a lease or a block ends. Tests pass a fake ``Clock`` instead: its time goes to
the script as ``ARGV[1]`` (milliseconds), and an empty ``ARGV[1]`` means "ask the
server". Every script of this package starts with ``LUA_NOW`` and keeps that
convention.
"""

from __future__ import annotations

import math

from gateway.clock import Clock

__all__ = [
    "DEFAULT_PREFIX",
    "LUA_NOW",
    "make_key",
    "ms",
    "now_arg",
    "text",
]

DEFAULT_PREFIX = "chorus:"
"""Prefix of every key the replicas' primitives write."""

LUA_NOW = """
local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local function fmt(x) return string.format('%.17g', x) end
"""
"""Lua prelude: ``now_ms()`` (the override in ARGV[1], else the server's time) and
``fmt()`` (a float as a string: a Lua number returned to Redis is cut to an integer)."""


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A")


def make_key(prefix: str, kind: str, *parts: str) -> str:
    """``prefix + kind:part:...:last``; all parts but the last escaped (see module doc)."""
    if not parts:
        return prefix + kind
    *head, last = parts
    return prefix + ":".join([kind, *(_escape(p) for p in head), last])


def now_arg(clock: Clock | None) -> str:
    """``ARGV[1]`` of a script: the fake clock's time in ms, or '' for the server's."""
    return "" if clock is None else repr(clock.time() * 1000.0)


def ms(seconds: float) -> int:
    """Seconds as whole milliseconds, rounded up and at least 1 (PX refuses 0)."""
    return max(1, math.ceil(seconds * 1000.0))


def text(value: object) -> str:
    """A reply from Redis as ``str``, whether the client decodes responses or not."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)

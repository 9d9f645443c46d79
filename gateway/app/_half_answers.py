"""``HalfAnswers``: what a dead owner left in the chats, finished once per session.

A turn of the dead owner may have answered several queued messages at once: its
half answer (the ids of the messages it had streamed) or its finished answer,
noted before delivery, is then noted for each of them. The new owner serves those
messages one by one; the first finishes that answer, in those messages, and the
ones after it are answered anew, so no answer overwrites another's and none is
delivered twice.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["HalfAnswers"]

KEEP = 10_000
"""Sessions remembered at most (the oldest are forgotten first)."""


class HalfAnswers:
    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._taken: OrderedDict[str, tuple[tuple[str, ...], str | None]] = OrderedDict()
        """Session -> the shown message ids (and noted answer) last taken up there."""

    def take(
        self, key: str, shown: tuple[str, ...], answer: str | None = None
    ) -> tuple[str, ...] | None:
        """The messages a delivery of ``key``'s session may finish its answer in.

        ``shown`` as noted, the first time; ``()`` when an earlier message of the
        session already took them up (it is answered anew); None when the same
        noted ``answer`` was already delivered there (nothing is left to give)."""
        if not shown and answer is None:
            return ()
        taken = self._taken.get(key)
        self._remember(key, (shown, answer))
        if taken is None or taken[0] != shown:
            return shown
        if answer is not None and taken[1] == answer:
            return None
        return ()

    def _remember(self, key: str, value: tuple[tuple[str, ...], str | None]) -> None:
        self._taken[key] = value
        self._taken.move_to_end(key)
        while len(self._taken) > self._keep:
            self._taken.popitem(last=False)

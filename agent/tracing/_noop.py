"""The tracer of a process without tracing: every call does nothing, at no cost."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

__all__ = ["NO_SPAN", "Attr", "NoSpan", "NoTracer"]

Attr = str | int | float | bool | Sequence[str]
"""What a span attribute may hold."""

TurnRef = tuple[str, str, str]
"""(platform, chat id, message id) of an inbound message."""


class NoSpan:
    """A span that records nothing; what every span of a process without tracing is."""

    def set(self, key: str, value: Attr | None) -> None:
        """Set an attribute (None: left out)."""

    def content(self, key: str, value: str | None) -> None:
        """Set an attribute that holds someone's words: only with ``include_content``."""

    def person(self, key: str | None) -> None:
        """Who the span is about: their id with ``include_person_ids``, else a keyed hash."""

    def fail(self, outcome: str) -> None:
        """Mark the span failed, with ``chorus.outcome``."""

    def end(self) -> None:
        """End a span started with ``Tracer.started``."""


NO_SPAN = NoSpan()


class NoTracer:
    """The tracer interface, doing nothing. ``agent.tracing.current()`` when tracing is off."""

    enabled = False

    @contextlib.contextmanager
    def span(self, name: str, **attributes: Attr) -> Iterator[NoSpan]:
        """A child of the current span, current inside the block; failed by an exception."""
        yield NO_SPAN

    def started(self, name: str, **attributes: Attr) -> NoSpan:
        """A child of the current span, ended by the caller."""
        return NO_SPAN

    def submitted(self, ref: TurnRef, received_ns: int, person: str, text: str) -> None:
        """A message went from intake to its session: its turn's trace starts."""

    @contextlib.contextmanager
    def turn(self, refs: Sequence[TurnRef], session_id: str, person: str) -> Iterator[NoSpan]:
        """The turn answering ``refs``: its trace is current inside the block."""
        yield NO_SPAN

    def carrier(self) -> str:
        """The current span as a W3C ``traceparent`` (``""``: none), for a job to link to."""
        return ""

    def shutdown(self, timeout: float) -> None:
        """Send what is left (within ``timeout`` seconds) and stop."""

"""What a server's health and a failed call are, without the ``mcp`` SDK: a gateway
with no server configured never imports it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerHealth", "ToolCallFailed"]


class ToolCallFailed(Exception):
    """A call did not produce a result; ``outcome`` is ``timeout``, ``unavailable`` or
    ``error``, the message is for the model."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


@dataclass(frozen=True)
class ServerHealth:
    """What ``chorus doctor`` and ``/admin status`` say of a server."""

    name: str
    up: bool
    tools: int
    last_error: str | None
    restarts: int

    def line(self) -> str:
        """One line for an operator: ``github: up, 12 tools`` or why it is down."""
        state = f"up, {self.tools} tools" if self.up else "DOWN"
        restarts = f", restarted {self.restarts}x" if self.restarts else ""
        error = f", last error: {self.last_error}" if self.last_error else ""
        return f"{self.name}: {state}{restarts}{error}"

"""Who pays for an LLM call, and the small protocol the gateway's budgets implement.

Every ``LLMClient.complete()`` of a session — every ``LLMClient.transcribe()``
of a voice note, every ``LLMClient.speak()`` of a spoken reply — carries a
``Charge``: the person whose session caused it, the session and what the call
is for (``turn``, ``compression``, ``flush``, ``summary``, ``transcription``,
``speech``). When the client has a ``UsageMeter``
(the gateway wires one from the ledger, the budgets and Redis), the client asks
it to ``reserve`` an estimate before the call — a turn's call is refused there
with ``BudgetExhausted`` when the person's budget is spent; background calls are
never refused — and ``settle``s the reservation with the usage the endpoint
reported (or an estimate, marked so, when it reported none) after it, or
``release``s it when the call failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "OUTPUT_ALLOWANCE",
    "Charge",
    "Purpose",
    "UsageMeter",
    "estimate_tokens",
]

Purpose = Literal["turn", "compression", "flush", "summary", "transcription", "speech"]

CHARS_PER_TOKEN = 4
"""The rough size of a token in characters, for estimates."""
OUTPUT_ALLOWANCE = 1_000
"""Output tokens a reservation expects of a call (settled with the real count after)."""


@dataclass(frozen=True)
class Charge:
    """Whom an LLM call is charged to."""

    person: str
    """The user key (``telegram:123``) of the person whose session caused the call."""
    session_id: str | None
    purpose: Purpose = "turn"
    chat: str | None = None
    """``platform:chat_id`` of the chat the turn came from (per-chat budget overrides)."""

    @property
    def background(self) -> bool:
        """Work the person did not wait for: never refused by a budget, always counted."""
        return self.purpose in ("flush", "summary")

    def as_(self, purpose: Purpose) -> Charge:
        return Charge(self.person, self.session_id, purpose, self.chat)


class UsageMeter(Protocol):
    """The gateway's ledger and budgets, as the LLM client sees them."""

    async def reserve(self, charge: Charge, model: str, estimate: int) -> object:
        """Hold ``estimate`` tokens of the person's budget before a call; returns the hold.
        Raises ``agent.errors.BudgetExhausted`` for a call that may be refused."""
        ...

    async def settle(
        self,
        hold: object,
        model: str,
        usage: tuple[int, int, int],
        *,
        estimated: bool,
    ) -> None:
        """Replace the hold with the call's usage (input, cached input, output tokens)
        and write it to the ledger."""
        ...

    async def release(self, hold: object) -> None:
        """Drop a hold whose call produced nothing."""
        ...


def estimate_tokens(messages: Sequence[Any], tools: Sequence[Any] | None = None) -> int:
    """A rough token count of a request (its JSON size over ``CHARS_PER_TOKEN``)."""
    size = len(json.dumps(list(messages), default=str))
    if tools:
        size += len(json.dumps(list(tools), default=str))
    return max(1, size // CHARS_PER_TOKEN)


def estimate_text(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN

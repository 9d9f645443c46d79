"""What an adapter is given to ``start``: where it hands what its platform delivers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gateway.events import InboundMessage, Retraction

if TYPE_CHECKING:
    from aiohttp import web


class Inbox(Protocol):
    """The durable record of what a platform delivered (``gateway.sessions.Inbox``)."""

    def take(self, platform: str, receipt: str, payload: str) -> bool:
        """Record a delivery before the platform is told it arrived; False if known already."""
        ...

    def take_many(
        self, platform: str, deliveries: Sequence[tuple[str, str]], *, durable: bool = True
    ) -> list[bool]:
        """``take`` for several ``(receipt, payload)`` deliveries, in one commit; raises
        ``InboxError`` when they cannot be recorded (the platform must deliver them again).
        ``durable=False``: committed, not yet on the disk (``sync`` puts it there)."""
        ...

    def sync(self) -> None:
        """Every record taken so far survives a power cut once this returns."""
        ...

    def done(self, platform: str, receipts: Sequence[str]) -> None:
        """Nothing is left to do for these deliveries."""
        ...


MessageHandler = Callable[[InboundMessage], Awaitable[None]]
"""The runner's intake: fast, never raises, only enqueues."""
CommandHandler = Callable[[InboundMessage], Awaitable[str]]
"""The runner's answer to a native slash command: the text to show its caller privately."""

RouteHandler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]
"""An HTTP route an adapter mounts on the gateway's server (webhooks)."""


class SharedBudgets(Protocol):
    """Budgets several replicas draw from together (``gateway.app`` gives Redis-backed ones)."""

    async def wait_for(
        self, chat_id: str, rate: float, burst: float, global_rate: float, global_burst: float
    ) -> float:
        """Take one message from the chat's and the bot's shared budgets and return 0, or
        return the seconds until both allow one (taking nothing)."""
        ...

    async def block(self, chat_id: str, seconds: float) -> None:
        """A flood block on the chat, for every replica."""
        ...


def _always_open() -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Intake:
    """Where an adapter hands what its platform delivers, given to ``start``.

    One process: the runner's intake. Several replicas: the router, which hands
    each message to the replica that owns its session; ``accepting`` then says
    whether Redis is reachable (webhooks answer 503 when not), and Telegram's
    send budgets are shared.
    """

    on_message: MessageHandler
    """Fast, never raises, only enqueues."""
    on_command: CommandHandler
    """The private answer to a native slash command."""
    inbox: Inbox | None = None
    """Where deliveries are recorded before they are acknowledged (durable turns)."""
    accepting: Callable[[], bool] = _always_open
    """Whether deliveries may be taken now; when not, the platform delivers again later."""
    budgets: SharedBudgets | None = None
    """Send budgets several replicas draw from together (Telegram's)."""
    on_retraction: Callable[[Retraction], Awaitable[None]] | None = None
    """A person deleted or edited a message of theirs (never raises)."""

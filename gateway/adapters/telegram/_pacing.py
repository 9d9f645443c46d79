"""One send budget per Telegram chat, shared by every path that sends or edits there.

Flood bans come from many send paths each pacing alone; here a reply, a streamed
edit and a notice for the same chat draw from the same token bucket, take turns
through one lock (so their order holds), and all wait out a ``RetryAfter`` that
any of them received. A global bucket keeps the whole bot under Telegram's
overall limit.

With several replicas every message also takes from budgets they share in Redis
(``shared``). A replica's messages ask for those in turn, the one at the head of
the queue waiting for the bot's next token, so one Redis call a message is
enough where every waiter asking again after each wait made about nine; a wait
longer than the bot's budget ever asks (its own chat's budget, or a flood
block) is slept out of the queue, holding up no other chat.

Notices to strangers (people the bot does not serve) take only what is left of
the global budget: they wait while any other message waits for it, and take a
token only when nobody else asks for one, so a crowd of strangers never delays
an answer to someone the bot serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from gateway.adapters._intake import SharedBudgets

logger = logging.getLogger(__name__)

PRIVATE_RATE = 1.0
"""Messages (sends and edits) per second in one private chat, on average."""
PRIVATE_BURST = 3.0
"""How many may go out at once in a private chat before the pace applies."""
GROUP_RATE = 20 / 60
"""Telegram allows a bot 20 messages a minute in one group."""
GROUP_BURST = 5.0
GLOBAL_RATE = 30.0
"""About 30 messages a second across all chats."""
GLOBAL_BURST = 30.0
LONGEST_GLOBAL_WAIT = 1.5 / GLOBAL_RATE
"""The longest wait the bot's shared budget gives for one token (1/30 s), with room
for clocks; a longer wait comes from the chat's own budget or a flood block."""
MAX_IDLE_CHATS = 10_000
_EPSILON = 1e-9
"""A token short of one by rounding alone counts as one (no waits of 1e-16 s)."""
"""Budgets kept for chats at rest before they are forgotten (they would be full anyway)."""


@dataclass(slots=True)
class _Bucket:
    rate: float
    burst: float
    tokens: float
    stamp: float
    blocked_until: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait(self, now: float) -> float:
        """Seconds until one message may go out."""
        self.refill(now)
        blocked = self.blocked_until - now
        short = (1.0 - self.tokens) / self.rate if self.tokens < 1.0 - _EPSILON else 0.0
        return max(blocked, short, 0.0)

    def resting(self, now: float) -> bool:
        self.refill(now)
        return not self.lock.locked() and self.tokens >= self.burst and self.blocked_until <= now


def is_group_chat(chat_id: str) -> bool:
    """Groups, supergroups and channels have negative ids."""
    return chat_id.startswith("-")


class ChatPacer:
    """Per-chat token buckets with flood blocks, plus one global bucket."""

    def __init__(
        self,
        *,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._now = now
        self._sleep = sleep
        self._chats: dict[str, _Bucket] = {}
        self._global = _Bucket(GLOBAL_RATE, GLOBAL_BURST, GLOBAL_BURST, now())
        self._waiting = 0
        self._senders = 0
        self._no_senders = asyncio.Event()
        self._no_senders.set()
        self._asking = 0
        """Messages (not spare ones) waiting for the bot's budget or taking from it."""
        self._nobody_asking = asyncio.Event()
        self._nobody_asking.set()
        self._spare_turn = asyncio.Lock()
        """Notices to strangers queue here, one at the head waiting for spare budget."""
        self._shared_turn = asyncio.Lock()
        """Messages ask for the shared budgets in turn, one at the head asking Redis."""
        self.shared: SharedBudgets | None = None
        """With several replicas: every message also waits for the budgets they share."""

    def _bucket(self, chat_id: str) -> _Bucket:
        bucket = self._chats.get(chat_id)
        if bucket is None:
            if len(self._chats) >= MAX_IDLE_CHATS:
                self._forget_resting()
            group = is_group_chat(chat_id)
            rate, burst = (GROUP_RATE, GROUP_BURST) if group else (PRIVATE_RATE, PRIVATE_BURST)
            bucket = _Bucket(rate, burst, burst, self._now())
            self._chats[chat_id] = bucket
        return bucket

    def _forget_resting(self) -> None:
        now = self._now()
        for chat_id in [c for c, b in self._chats.items() if b.resting(now)]:
            del self._chats[chat_id]

    def turn(self, chat_id: str) -> asyncio.Lock:
        """Held around one message's whole delivery (retries included): one at a time."""
        return self._bucket(chat_id).lock

    async def acquire(self, chat_id: str, *, spare: bool = False) -> None:
        """Wait until the chat's and the bot's budgets allow one message, then spend it.

        Messages take the bot's budget in the order they asked for it (one waits at
        the head, the rest queue behind it), so the first answers ready are the first
        out and a burst does not wake every waiter at every token. A ``spare`` message
        (a notice to a stranger) waits until no other message waits (``_acquire_spare``).
        """
        bucket = self._bucket(chat_id)
        if spare:
            await self._acquire_spare(bucket)
            if self.shared is not None:
                await self._take_shared(chat_id, bucket)
            return
        self._waiting += 1
        self._senders += 1
        self._no_senders.clear()
        try:
            while True:
                while (wait := bucket.wait(self._now())) > 0:
                    await self._sleep(wait)
                with self._asking_for_global():
                    async with self._global.lock:
                        while (wait := self._global.wait(self._now())) > 0:
                            await self._sleep(wait)
                        if bucket.wait(self._now()) > 0:
                            continue  # the chat was flood-blocked meanwhile
                        bucket.tokens -= 1.0
                        self._global.tokens -= 1.0
                        break
            if self.shared is not None:
                await self._take_shared(chat_id, bucket)
        finally:
            self._waiting -= 1
            self._senders -= 1
            if self._senders == 0:
                self._no_senders.set()

    @contextlib.contextmanager
    def _asking_for_global(self) -> Iterator[None]:
        """A message (not a spare one) waits for the bot's budget: spare ones wait."""
        self._asking += 1
        self._nobody_asking.clear()
        try:
            yield
        finally:
            self._asking -= 1
            if self._asking == 0:
                self._nobody_asking.set()

    async def _acquire_spare(self, bucket: _Bucket) -> None:
        """Spend a token no other message is waiting for: while any message waits for
        the bot's budget, a spare one waits until none does (a message waiting only
        for its own chat's budget holds nothing up). Spare messages queue among
        themselves in the order they asked."""
        while True:
            while (wait := bucket.wait(self._now())) > 0:
                await self._sleep(wait)  # its own chat's budget: holding up nobody
            async with self._spare_turn:
                while True:
                    if self._asking > 0:
                        await self._nobody_asking.wait()
                        continue
                    if (wait := self._global.wait(self._now())) > 0:
                        await self._sleep(wait)
                        continue
                    break
                if bucket.wait(self._now()) > 0:
                    continue  # the chat was flood-blocked meanwhile
                bucket.tokens -= 1.0
                self._global.tokens -= 1.0
                return

    async def _take_shared(self, chat_id: str, bucket: _Bucket) -> None:
        """Take from the budgets every replica shares: in turn with this replica's other
        messages while the bot's budget is what makes them wait, out of turn while the
        chat's own budget (or a flood block) does."""
        assert self.shared is not None
        try:
            while True:
                async with self._shared_turn:
                    wait = await self._ask_shared(chat_id, bucket)
                    while 0 < wait <= LONGEST_GLOBAL_WAIT:
                        await self._sleep(wait)  # the bot's next token: the others queue
                        wait = await self._ask_shared(chat_id, bucket)
                if wait <= 0:
                    return
                await self._sleep(wait)  # the chat's budget: holding up no other chat
        except Exception as exc:  # Redis away: this replica's own budget still holds
            logger.warning("shared telegram budget unavailable (%s)", type(exc).__name__)

    async def _ask_shared(self, chat_id: str, bucket: _Bucket) -> float:
        assert self.shared is not None
        return await self.shared.wait_for(
            chat_id, bucket.rate, bucket.burst, GLOBAL_RATE, GLOBAL_BURST
        )

    def has_spare(self) -> bool:
        """Whether the bot's budget has room beyond what messages need now (for typing…)."""
        return (
            self._waiting == 0
            and self._global.wait(self._now()) <= 0
            and (self._global.tokens >= GLOBAL_BURST / 2)
        )

    async def wait_ready(self, chat_id: str) -> None:
        """Wait until a message to the chat could go out at once (nothing is spent).

        Messages already waiting for the bot's budget go first: an optional update
        (a streamed edit) waits until none is queued.
        """
        bucket = self._bucket(chat_id)
        self._waiting += 1
        try:
            while True:
                await self._no_senders.wait()
                if (wait := bucket.wait(self._now())) > 0:
                    await self._sleep(wait)
                    continue
                wait = self._global.wait(self._now())
                if wait <= 0 and self._no_senders.is_set():
                    return
                if wait > 0:
                    with self._asking_for_global():
                        await self._sleep(wait)
        finally:
            self._waiting -= 1

    def block(self, chat_id: str, seconds: float) -> None:
        """Telegram said ``retry_after``: nothing goes to this chat for ``seconds``."""
        bucket = self._bucket(chat_id)
        bucket.blocked_until = max(bucket.blocked_until, self._now() + seconds)
        if self.shared is not None:
            task = asyncio.ensure_future(self.shared.block(chat_id, seconds))
            task.add_done_callback(_quiet)

    def blocked_for(self, chat_id: str) -> float:
        """Seconds left of a flood block on this chat (0 when none)."""
        bucket = self._chats.get(chat_id)
        return 0.0 if bucket is None else max(0.0, bucket.blocked_until - self._now())


def _quiet(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning("could not share a flood block (%s)", type(task.exception()).__name__)

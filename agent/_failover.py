"""Which endpoint answers an LLM call: the primary (``llm``), then ``llm.fallbacks`` in order.

``Failover.run`` makes the attempts of one call through an ``attempt(index, live)``
callable (``agent.llm`` owns the HTTP client) that returns the answer, raises
``Transient`` for a failure another attempt may not have (connection, timeout,
429, 5xx, a stream that died), or any other error, which ends the call at once
(a refused request: retrying cannot help).

- One endpoint: it is retried ``retries`` times with backoff (or the server's
  ``Retry-After``) while nothing has streamed; text already shown ends the call.
- With fallbacks: a failure moves on to the next endpoint at once, and a whole
  round that failed is tried again (``retries`` more rounds, backoff between).
  An answer that dies mid-stream is finished by the next endpoint, not streamed
  (``live`` False): its complete text replaces what was shown. A 429 that says
  when the rate limit resets sends later calls past that endpoint until then;
  every other call starts again at the primary.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from agent.errors import LLMUnavailable

__all__ = ["Endpoint", "Failover", "Transient", "cause", "host_of", "retry_after"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

BACKOFF_BASE_SECONDS = 0.5
"""First retry waits about this long; each further retry doubles it."""
BACKOFF_MAX_SECONDS = 20.0
"""No single wait between retries is longer than this."""
COOLDOWN_MAX_SECONDS = 3600.0
"""No endpoint is passed over for longer than this after a 429."""


class Transient(Exception):
    """One attempt failed in a way the next attempt may not."""

    def __init__(self, reason: str, *, wait: float | None = None, streamed: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait
        """Seconds the server asked to wait (``Retry-After``), when it said."""
        self.streamed = streamed
        """Text of this attempt had reached the caller before it failed."""
        self.rate_limited = False


@dataclass(frozen=True)
class Endpoint:
    """One endpoint as logs name it (never its key)."""

    host: str
    model: str | None
    """The model it is asked for; None: the one the call names (the primary)."""

    def label(self, asked: str) -> str:
        return f"{self.host} (model {self.model or asked})"


def host_of(base_url: str | None) -> str:
    """The host a base URL points at (``api.openai.com`` when None)."""
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    return parts.netloc.rpartition("@")[2] or base_url


class Failover:
    """The endpoints of one client, and which of them are cooling down after a 429."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        *,
        retries: int,
        sleep: Sleep,
        now: Callable[[], float] = time.monotonic,
        on_failover: Callable[[str], None] | None = None,
    ) -> None:
        self.endpoints = tuple(endpoints)
        self._retries = retries
        self._sleep = sleep
        self._now = now
        self._on_failover = on_failover
        self._cooling: dict[int, float] = {}
        """Endpoint index -> monotonic time its reported rate-limit reset passes."""

    def order(self) -> list[int]:
        """Where a call starts: the endpoints whose rate-limit reset has passed, in order,
        then those still cooling down (a last resort)."""
        now = self._now()
        indices = range(len(self.endpoints))
        ready = [i for i in indices if self._cooling.get(i, now) <= now]
        return ready + [i for i in indices if i not in ready]

    async def run(self, attempt: Callable[[int, bool], Awaitable[T]], asked: str) -> tuple[T, int]:
        """The answer of the first attempt that gives one, and its endpoint's index."""
        several = len(self.endpoints) > 1
        live, tries, last = True, 0, ""
        previous: int | None = None
        for round_ in range(self._retries + 1):
            waits: list[float] = []
            for index in self.order() if several else [0]:
                if previous is not None and previous != index:
                    self._moved(previous, index, last, asked)
                tries += 1
                try:
                    return await attempt(index, live), index
                except Transient as failure:
                    last, previous = failure.reason, index
                    if failure.wait is not None:
                        waits.append(failure.wait)
                        if failure.rate_limited and several:
                            cooldown = min(failure.wait, COOLDOWN_MAX_SECONDS)
                            self._cooling[index] = self._now() + cooldown
                    if failure.streamed:
                        if not several:
                            raise _gave_up(tries, last) from None
                        live = False  # the next answer replaces the words shown
            if round_ == self._retries:
                break
            delay = min(min(waits), BACKOFF_MAX_SECONDS) if waits else backoff(round_)
            if several:
                logger.warning(
                    "every LLM endpoint failed (last: %s); trying again in %.1fs", last, delay
                )
            else:
                logger.warning("LLM call failed (%s); retry %d in %.1fs", last, round_ + 1, delay)
            await self._sleep(delay)
        raise _gave_up(tries, last)

    def _moved(self, failed: int, to: int, reason: str, asked: str) -> None:
        source, target = self.endpoints[failed], self.endpoints[to]
        logger.warning(
            "LLM endpoint %s failed (%s); the answer comes from %s",
            source.label(asked),
            reason,
            target.label(asked),
        )
        if self._on_failover is not None:
            try:
                self._on_failover(target.model or asked)
            except Exception:
                logger.exception("LLM failover observer failed")


def _gave_up(tries: int, reason: str) -> LLMUnavailable:
    logger.error("LLM call failed after %d attempt(s): %s", tries, reason)
    return LLMUnavailable(f"LLM endpoint unavailable: {reason}")


def backoff(attempt: int) -> float:
    delay = BACKOFF_BASE_SECONDS * (2**attempt)
    return float(min(BACKOFF_MAX_SECONDS, delay + random.uniform(0, delay / 4)))


def cause(exc: BaseException) -> str:
    """The failure's class, with the transport's own error it came from (when one did)."""
    name = type(exc).__name__
    origin = exc.__cause__
    return f"{name} ({type(origin).__name__})" if origin is not None else name


def retry_after(response: Any, now: float | None = None) -> float | None:
    """Seconds the server asks to wait; None when it does not say (or says nonsense).

    ``retry-after-ms`` (OpenAI's) wins over ``Retry-After``, which may be seconds
    or an HTTP date.
    """
    if response is None:
        return None
    headers = response.headers
    seconds: float | None = None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            seconds = float(millis) / 1000
    value = headers.get("retry-after")
    if seconds is None and value is not None:
        try:
            seconds = float(value)
        except ValueError:
            with contextlib.suppress(TypeError, ValueError, IndexError):
                when = parsedate_to_datetime(value)
                seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds is None or seconds != seconds or seconds < 0:
        return None
    return seconds

"""``PersonalConnections``: a server whose ``headers``/``env`` name a person's secret
(``{person.secret.NAME}``), reached by each person with their own credential.

Each person gets a connection of their own, made with their secrets filled in:
for a stdio server a process of theirs, for a Streamable HTTP server a client
session of theirs whose every request carries their headers (the SDK's
transport sends one client's headers with every request, so a session per
person is what keeps one person's token off another's calls). A connection is
started on demand, at the person's first call; it is stopped when it has had
no call for ``tools.idle_seconds``, or when the person's secret changed (the
next call starts one with the new value), and at shutdown.

A call from a person without the secret, or from a turn that is not one
person's, never reaches the server: the model gets a result saying how the
person sets it (``/secret set NAME`` in a direct message with the bot). The
values are handed to ``reveal`` (the log masking) when read, and never appear
in what the model is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp import types

from agent.tools.mcp._server import START_TIMEOUT, McpServer, ToolCallFailed
from agent.tools.mcp.settings import McpServerSettings
from memory.errors import SecretKeyMismatch, SecretKeyMissing, SecretStoreError

__all__ = ["IDLE_CHECK", "PersonalConnections", "Reveal", "SecretLookup"]

logger = logging.getLogger(__name__)

SecretLookup = Callable[[str, str], str | None]
"""``(person, name) -> value`` (``SecretStore.get``): None when the person has not set it."""
Reveal = Callable[[str], None]
"""Told each secret value read, so that no log line shows it."""

IDLE_CHECK = 1.0
"""Seconds between two looks for idle connections."""


@dataclass
class _Connection:
    server: McpServer
    values: dict[str, str]
    last_used: float
    busy: int = 0


class PersonalConnections:
    """The people's connections to one server that takes a person's secrets."""

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        secrets: SecretLookup | None,
        reveal: Reveal,
        idle_seconds: float,
        now: Callable[[], float],
        errlog: Any = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.needed = settings.secrets_needed()
        self._secrets = secrets
        self._reveal = reveal
        self._idle = idle_seconds
        self._now = now
        self._errlog = errlog
        self._people: dict[str, _Connection] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def people(self) -> list[str]:
        """Whose connections are open now."""
        return sorted(self._people)

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap(), name=f"mcp-idle:{self.name}")

    async def stop(self) -> None:
        """Stop every person's connection (and the look for idle ones)."""
        self._closed = True
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            await asyncio.gather(reaper, return_exceptions=True)
        people, self._people = self._people, {}
        await asyncio.gather(*(conn.server.stop() for conn in people.values()))

    async def call(
        self, person: str | None, tool: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """``tool`` of this server, called with ``person``'s credential; ``ToolCallFailed``
        (outcome ``no_credential``) when they have none to call it with."""
        if person is None:
            raise ToolCallFailed(
                "no_credential",
                f"the tool server {self.name} acts with the credentials of the person "
                "calling it, and this turn is not one person's: ask again in a message "
                "of your own",
            )
        values = await self._values(person)
        conn = await self._connection(person, values)
        conn.busy += 1
        try:
            return await conn.server.call(tool, arguments)
        except ToolCallFailed as exc:
            raise ToolCallFailed(exc.outcome, _hidden(str(exc), values)) from None
        finally:
            conn.busy -= 1
            conn.last_used = self._now()

    async def _values(self, person: str) -> dict[str, str]:
        values: dict[str, str] = {}
        for name in self.needed:
            value = await self._read(person, name)
            if value is None:
                raise ToolCallFailed(
                    "no_credential",
                    f"the tool server {self.name} acts with each person's own {name}, and "
                    f"this person has not set theirs: send /secret set {name} in a direct "
                    "message with the bot, then ask again",
                )
            self._reveal(value)
            values[name] = value
        return values

    async def _read(self, person: str, name: str) -> str | None:
        if self._secrets is None:
            return None
        try:
            return await asyncio.to_thread(self._secrets, person, name)
        except SecretKeyMissing:
            raise ToolCallFailed(
                "no_credential",
                f"the tool server {self.name} needs this person's {name}, and secrets "
                "cannot be read here: the operator has not set CHORUS_SECRET_KEY",
            ) from None
        except SecretKeyMismatch:
            logger.warning("the secret %s of %s was sealed with another key", name, person)
            raise ToolCallFailed(
                "no_credential",
                f"this person's {name} was stored under another key and cannot be used: "
                f"send /secret set {name} again in a direct message with the bot",
            ) from None
        except SecretStoreError as exc:
            logger.warning("reading the secret %s of %s failed (%s)", name, person, exc)
            raise ToolCallFailed(
                "error", f"this person's {name} could not be read just now; try again later"
            ) from None

    async def _connection(self, person: str, values: dict[str, str]) -> _Connection:
        lock = self._starting.setdefault(person, asyncio.Lock())
        async with lock:
            if self._closed:
                raise ToolCallFailed("unavailable", f"the tool server {self.name} is stopping")
            conn = self._people.get(person)
            if conn is not None and conn.values != values:  # the secret changed
                del self._people[person]
                logger.info("mcp server %s: %s's secret changed, reconnecting", self.name, person)
                await conn.server.stop()
                conn = None
            if conn is None:
                server = McpServer(self.name, self.settings.for_person(values), errlog=self._errlog)
                conn = _Connection(server, values, self._now())
                self._people[person] = conn
                server.start()
                logger.info("mcp server %s: connecting for %s", self.name, person)
                with contextlib.suppress(TimeoutError):
                    wait = max(self.settings.timeout, START_TIMEOUT)
                    await asyncio.wait_for(server.tried(), wait)
            conn.last_used = self._now()
            return conn

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(IDLE_CHECK)
            now = self._now()
            for person, conn in list(self._people.items()):
                if conn.busy or now - conn.last_used < self._idle:
                    continue
                if self._people.get(person) is conn:
                    del self._people[person]
                    logger.info("mcp server %s: %s's connection idle, stopped", self.name, person)
                    await conn.server.stop()


def _hidden(text: str, values: dict[str, str]) -> str:
    for value in sorted(values.values(), key=len, reverse=True):
        text = text.replace(value, "***")
    return text

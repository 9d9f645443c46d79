"""``/secret``: each person's own credentials for tools, and the capture of a value.

``/secret set NAME`` works only in a direct message: it leaves a request in the
secret store (``memory.secrets``), and the person's next message in that chat
is the value. ``SecretDesk.capture`` takes that message before anything else
does (the runner asks it right after dropping duplicates): it never reaches a
session, the model, the transcript or a memory provider. The value is sealed
and stored, the delivery's payload is dropped from the inbox (the row stays
settled, so a redelivery is still recognised), the message is deleted on the
platform where a bot may do that, and the person is told (the value is never
echoed). The request lives in the database, so the next message is caught on
any replica and after a restart; it expires after ``REQUEST_TTL`` seconds and
``/cancel`` or ``/secret cancel`` drops it. When the request cannot be looked up
(the database fails), the message is not read at all.

While a request waits, the commands chorus knows still work; anything else in
that chat is the value.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from gateway.adapters import AdapterError, BaseAdapter
from gateway.clock import Clock
from gateway.commands import _secret_texts as t
from gateway.commands._registry import Command, CommandContext, CommandRegistry, parse_command
from gateway.config import Settings, database_location
from gateway.errors import ConfigError
from gateway.events import InboundMessage
from gateway.logs import register_secret
from memory.errors import SecretKeyMissing, SecretStoreError
from memory.secrets import MAX_VALUE_CHARS, SecretKey, SecretStore, valid_name

__all__ = ["REQUEST_TTL", "SecretDesk", "SecretInbox", "open_secret_store"]

logger = logging.getLogger(__name__)

REQUEST_TTL = 300.0
"""Seconds a ``/secret set`` waits for its value."""


def open_secret_store(settings: Settings) -> SecretStore:
    """The secret store, sealing with ``CHORUS_SECRET_KEY`` (none set: it stores nothing);
    a key too short is a ``ConfigError``."""
    secret = settings.secrets.key
    raw = secret.get_secret_value().strip() if secret is not None else ""
    try:
        key = SecretKey(raw) if raw else None
    except SecretKeyMissing as exc:
        raise ConfigError(str(exc)) from None
    return SecretStore(database_location(settings), key)


class SecretInbox(Protocol):
    """The part of the durable inbox that forgets a delivery's payload (``Inbox.forget``)."""

    def forget(self, platform: str, receipts: Sequence[str]) -> None: ...


class SecretDesk:
    def __init__(
        self,
        store: SecretStore,
        clock: Clock,
        *,
        inbox: SecretInbox | None = None,
        adapters: Mapping[str, BaseAdapter] | None = None,
        ttl: float = REQUEST_TTL,
    ) -> None:
        self.store = store
        self._clock = clock
        self._inbox = inbox
        self._adapters = adapters if adapters is not None else {}
        self._ttl = ttl
        self._registry: CommandRegistry | None = None

    # ------------------------------------------------------------------ capture

    async def capture(self, msg: InboundMessage) -> str | None:
        """What to tell the sender when ``msg`` is the value a ``/secret set`` waits for
        (it was stored, or why not); None when it is not one (handle it as usual)."""
        if not msg.is_direct:
            return None
        command = parse_command(msg.text)
        registry = self._registry
        if command is not None and registry is not None and registry.get(command[0]) is not None:
            return None  # a command of ours: it runs, the request keeps waiting
        person, now = str(msg.user_key), self._clock.time()
        if self.store.nothing_waiting(now):  # the usual case: no look-up, no thread
            return None
        try:
            request = await asyncio.to_thread(self.store.pending_in, person, msg.chat_id, now)
        except SecretStoreError as exc:
            logger.warning(
                "a %s message was not read: the secret store failed (%s)", msg.platform, exc
            )
            await self._forget(msg)
            return t.UNCHECKED
        if request is None:
            return None
        name = request.name
        value = msg.text.strip()
        if not value:
            return t.NOT_TEXT.format(name=name)  # the request keeps waiting
        register_secret(value)  # masked in any log line from now on
        reason = await self._store(person, msg.chat_id, name, value, now)
        await self._forget(msg)
        deleted = await self._delete(msg)
        if reason is not None:
            return t.NOT_SAVED.format(name=name, reason=reason, deleted=deleted)
        logger.info("stored the secret %s of %s", name, person)
        return t.SAVED.format(name=name, deleted=deleted)

    async def _store(
        self, person: str, chat_id: str, name: str, value: str, now: float
    ) -> str | None:
        """Store the value and drop the request in one transaction; None when it was
        stored, else why not (for the person). A value not stored drops the request."""
        reason: str | None = None
        if len(value) > MAX_VALUE_CHARS:
            reason = t.REASON_TOO_LONG
        else:
            try:
                stored = await asyncio.to_thread(self.store.fulfil, person, chat_id, value, now)
            except SecretKeyMissing:
                logger.warning(
                    "the secret %s of %s was not stored: no CHORUS_SECRET_KEY", name, person
                )
                reason = t.REASON_NO_KEY
            except SecretStoreError as exc:
                logger.warning("storing the secret %s of %s failed (%s)", name, person, exc)
                reason = t.REASON_STORE
            else:
                return None if stored is not None else t.REASON_GONE
        with contextlib.suppress(SecretStoreError):
            await asyncio.to_thread(self.store.cancel, person, now)
        return reason

    async def _forget(self, msg: InboundMessage) -> None:
        """Drop the delivery's payload from the inbox (it held the value)."""
        if self._inbox is None or not msg.receipts:
            return
        try:
            await asyncio.to_thread(self._inbox.forget, msg.platform, list(msg.receipts))
        except Exception as exc:
            logger.warning("a secret's delivery stays in the inbox (%s)", type(exc).__name__)

    async def _delete(self, msg: InboundMessage) -> str:
        """Delete the message on its platform; what to tell the person about it."""
        adapter = self._adapters.get(msg.platform)
        try:
            done = adapter is not None and await adapter.delete_message(msg.chat_id, msg.message_id)
        except AdapterError as exc:
            logger.info("a message with a secret was not deleted on %s (%s)", msg.platform, exc)
            return t.DELETE_FAILED
        return t.DELETED if done else t.DELETE_YOURSELF.format(platform=msg.platform)

    # ------------------------------------------------------------------ commands

    def register(self, registry: CommandRegistry) -> None:
        self._registry = registry
        registry.register(
            Command(
                "secret",
                "your own credentials for tools: set NAME (in a direct message), list, delete",
                self._secret_command,
                admin_only=False,
                args="set NAME | list | delete NAME | cancel",
                private=True,
                in_groups=False,  # a secret is set only in a direct message
            )
        )
        registry.register(
            Command(
                "cancel",
                "stop a /secret set that waits for its value",
                self._cancel_command,
                admin_only=False,
                private=True,
                in_groups=False,  # a secret is set only in a direct message
            )
        )

    async def _secret_command(self, ctx: CommandContext) -> str:
        action, _, rest = ctx.args.partition(" ")
        action, rest = action.lower(), rest.strip()
        if action == "set":
            return await self._set(ctx, rest)
        if action == "list" and not rest:
            names = await asyncio.to_thread(self.store.names, str(ctx.user_key))
            if not names:
                return t.NONE_STORED
            return "\n".join([t.LIST_HEADER, *(f"• {name}" for name in names)])
        if action in ("delete", "remove") and rest:
            gone = await asyncio.to_thread(self.store.delete, str(ctx.user_key), rest)
            return (t.REMOVED if gone else t.NO_SUCH).format(name=rest)
        if action == "cancel" and not rest:
            return await self._cancel_command(ctx)
        return t.USAGE

    async def _set(self, ctx: CommandContext, rest: str) -> str:
        name, _, extra = rest.partition(" ")
        if extra.strip():  # the value typed after the name: it is dropped, never stored
            await self._forget(ctx.msg)
            deleted = await self._delete(ctx.msg)
            return t.VALUE_IN_COMMAND.format(name=name, deleted=deleted)
        if not name:
            return t.USAGE
        if not ctx.msg.is_direct:
            return t.DM_ONLY.format(name=name)
        if not valid_name(name):
            return t.BAD_NAME.format(name=name[:70])
        if not self.store.has_key:
            logger.warning(
                "%s asked to store a secret, but CHORUS_SECRET_KEY is not set", ctx.user_key
            )
            return t.NO_KEY
        expires = self._clock.time() + self._ttl
        await asyncio.to_thread(
            self.store.request, str(ctx.user_key), ctx.msg.chat_id, name, expires
        )
        return t.ASK_VALUE.format(name=name, minutes=max(1, round(self._ttl / 60)))

    async def _cancel_command(self, ctx: CommandContext) -> str:
        now = self._clock.time()
        dropped = await asyncio.to_thread(self.store.cancel, str(ctx.user_key), now)
        return t.NOTHING_WAITING if dropped is None else t.CANCELLED.format(name=dropped.name)

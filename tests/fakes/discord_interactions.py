"""Application commands and interactions, as the fake Discord serves them.

``PUT /applications/{app}/commands`` (and ``…/guilds/{guild}/commands``) stores
what the bot registers; ``interaction()`` dispatches an INTERACTION_CREATE of
one of those commands (options checked against what was registered, as
Discord's client would build them) and returns the ``FakeInteraction`` where
the answers arrive: the callback (``POST /interactions/{id}/{token}/callback``:
type 4 a message, type 5 a deferral), edits of the original response
(``PATCH /webhooks/{app}/{token}/messages/@original``) and follow-ups
(``POST /webhooks/{app}/{token}``). These routes take the interaction token,
not the bot token, as Discord's do.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.discord_data import APP_ID, BOT_USER, message, snowflake
from tests.fakes.discord_data import json_response as _json

_command_ids = itertools.count(1)
EPHEMERAL = 64
SUB_COMMAND = 1
MESSAGE_MENU = 3
"""The command type of a message context menu."""
"""The option type of a subcommand (application command option types)."""


@dataclass
class FakeInteraction:
    id: int
    token: str
    name: str
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    followups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        """A message is shown: a type-4 callback, or a deferral then an edit."""
        kinds = [c.get("type") for c in self.callbacks]
        return 4 in kinds or (5 in kinds and bool(self.edits))

    @property
    def text(self) -> str:
        """What the caller sees: the response (or its last edit), then any follow-ups."""
        parts: list[str] = []
        for callback in self.callbacks:
            if callback.get("type") == 4:
                parts.append(str((callback.get("data") or {}).get("content") or ""))
        if self.edits:
            parts = [str(self.edits[-1].get("content") or "")]
        parts.extend(str(f.get("content") or "") for f in self.followups)
        return "\n".join(parts)

    @property
    def ephemeral(self) -> bool:
        """Every message shown to the caller carried the ephemeral flag."""
        shown = [c.get("data") or {} for c in self.callbacks] + self.followups
        return bool(shown) and all(int(d.get("flags") or 0) & EPHEMERAL for d in shown)


class InteractionsServer:
    """The interaction half of ``FakeDiscord`` (a mixin: it needs ``_call``)."""

    _lock: threading.Lock

    def _init_interactions(self) -> None:
        self.commands: dict[int | None, list[dict[str, Any]]] = {}
        """Registered application commands by guild (None: global)."""
        self.interactions: dict[str, FakeInteraction] = {}

    def command_names(self, guild_id: int | None = None) -> list[str]:
        with self._lock:
            return [c["name"] for c in self.commands.get(guild_id, [])]

    def interaction(
        self,
        name: str,
        *,
        user: dict[str, Any],
        channel_id: int,
        guild_id: int | None = None,
        args: str | None = None,
        sub: str | None = None,
        values: dict[str, str] | None = None,
    ) -> FakeInteraction:
        """Someone runs ``/name`` (with ``args`` as its option, or the subcommand ``sub``
        with its option ``values``) from Discord's command picker."""
        with self._lock:
            registered = self.commands.get(guild_id, []) + self.commands.get(None, [])
        found = [c for c in registered if c["name"] == name and c.get("type", 1) == 1]
        if not found:
            raise AssertionError(f"/{name} is not registered")
        command = found[0]
        options: list[dict[str, Any]] = []
        if sub is not None:
            options = [_subcommand_option(command, sub, values or {})]
        elif args is not None:
            names = [o["name"] for o in command.get("options", [])]
            assert names == ["args"], f"/{name} takes no text option (it has {names})"
            options = [{"name": "args", "type": 3, "value": args}]
        record = FakeInteraction(snowflake(), f"itoken-{uuid.uuid4().hex}", name)
        data = _envelope(record, 2, user, channel_id, guild_id)
        data["data"] = {"id": command["id"], "name": name, "type": 1, "options": options}
        with self._lock:
            self.interactions[record.token] = record
        self.dispatch("INTERACTION_CREATE", data)
        return record

    def ask(
        self,
        target: dict[str, Any],
        *,
        user: dict[str, Any],
        guild_id: int | None = None,
        name: str = "Ask chorus",
    ) -> FakeInteraction:
        """Someone picks the message context menu ``name`` (a command of type 3) on the
        message ``target``: the interaction names it (``target_id``) and carries it in
        ``resolved.messages``, as Discord's client sends it."""
        with self._lock:
            registered = self.commands.get(guild_id, []) + self.commands.get(None, [])
        found = [c for c in registered if c["name"] == name and c.get("type") == MESSAGE_MENU]
        if not found:
            raise AssertionError(f"no message context menu {name!r} is registered")
        record = FakeInteraction(snowflake(), f"itoken-{uuid.uuid4().hex}", name)
        data = _envelope(record, 2, user, int(target["channel_id"]), guild_id)
        data["data"] = {
            "id": found[0]["id"],
            "name": name,
            "type": MESSAGE_MENU,
            "target_id": target["id"],
            "resolved": {"messages": {target["id"]: target}},
        }
        with self._lock:
            self.interactions[record.token] = record
        self.dispatch("INTERACTION_CREATE", data)
        return record

    def press(
        self,
        sent: dict[str, Any],
        custom_id: str,
        *,
        user: dict[str, Any],
        guild_id: int | None = None,
    ) -> FakeInteraction:
        """Someone presses the button ``custom_id`` under the bot's message ``sent`` (a
        message component interaction, type 3)."""
        buttons = [c for row in sent.get("components") or [] for c in row.get("components", [])]
        if not any(b.get("custom_id") == custom_id for b in buttons):
            raise AssertionError(f"no button {custom_id!r} under that message")
        record = FakeInteraction(snowflake(), f"itoken-{uuid.uuid4().hex}", custom_id)
        data = _envelope(record, 3, user, int(sent["channel_id"]), guild_id)
        data["data"] = {"custom_id": custom_id, "component_type": 2}
        data["message"] = sent
        with self._lock:
            self.interactions[record.token] = record
        self.dispatch("INTERACTION_CREATE", data)
        return record

    async def wait_answered(self, record: FakeInteraction, timeout: float = 15.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not record.answered:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"/{record.name} was not answered: {record.callbacks}")
            await asyncio.sleep(0.02)

    # ------------------------------------------------------------------- REST

    def _interaction_rest(
        self, method: str, parts: list[str], body: dict[str, Any]
    ) -> web.Response | None:
        """The routes of this half, or None when the request is not one of them."""
        if parts[0] == "applications" and parts[-1] == "commands" and method == "PUT":
            guild = int(parts[3]) if len(parts) == 5 and parts[2] == "guilds" else None
            return self._put_commands(guild, body)
        if parts[0] == "interactions" and len(parts) == 4 and parts[3] == "callback":
            return self._callback(int(parts[1]), parts[2], body)
        if parts[0] == "webhooks" and len(parts) == 5 and parts[4] == "@original":
            return self._edit_original(parts[2], body)
        if parts[0] == "webhooks" and len(parts) == 3 and method == "POST":
            return self._followup(parts[2], body)
        return None

    def _put_commands(self, guild: int | None, body: Any) -> web.Response:
        assert isinstance(body, list)
        stored = []
        for command in body:
            entry = {
                **command,
                "id": str(next(_command_ids) + 1_000),
                "application_id": str(APP_ID),
                "version": "1",
                "type": command.get("type", 1),
                "description": command.get("description", ""),  # "" for context menus
            }
            if guild is not None:
                entry["guild_id"] = str(guild)
            stored.append(entry)
        with self._lock:
            self.commands[guild] = stored
        return _json(stored)

    def _record(self, token: str) -> FakeInteraction | None:
        with self._lock:
            return self.interactions.get(token)

    def _callback(self, interaction_id: int, token: str, body: dict[str, Any]) -> web.Response:
        record = self._record(token)
        if record is None or record.id != interaction_id:
            return _json({"message": "Unknown interaction", "code": 10062}, status=404)
        if record.callbacks:
            done = {"message": "Interaction has already been acknowledged.", "code": 40060}
            return _json(done, status=400)
        with self._lock:
            record.callbacks.append(body)
        data = body.get("data") or {}
        answer: dict[str, Any] = {
            "interaction": {
                "id": str(interaction_id),
                "type": 2,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool(int(data.get("flags") or 0) & EPHEMERAL),
            }
        }
        return _json(answer)

    def _edit_original(self, token: str, body: dict[str, Any]) -> web.Response:
        record = self._record(token)
        if record is None or not record.callbacks:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        with self._lock:
            record.edits.append(body)
        return _json(self._message(body))

    def _followup(self, token: str, body: dict[str, Any]) -> web.Response:
        record = self._record(token)
        if record is None or not record.callbacks:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        with self._lock:
            record.followups.append(body)
        return _json(self._message(body))

    @staticmethod
    def _message(body: dict[str, Any]) -> dict[str, Any]:
        return message(
            message_id=snowflake(),
            channel_id=1,
            author=BOT_USER,
            content=str(body.get("content") or ""),
        )

    # ------------------------------------------------------ needed from FakeDiscord

    def dispatch(self, event: str, data: Any) -> None:
        raise NotImplementedError


def _subcommand_option(command: dict[str, Any], sub: str, values: dict[str, str]) -> dict[str, Any]:
    """The SUB_COMMAND option (type 1) Discord's client sends for ``sub``: only options
    it registered, every required one, and a value of its ``choices`` where it has them."""
    subs = {o["name"]: o for o in command.get("options", []) if o.get("type") == SUB_COMMAND}
    if sub not in subs:
        raise AssertionError(f"/{command['name']} has no subcommand {sub!r} ({sorted(subs)})")
    declared = {o["name"]: o for o in subs[sub].get("options", [])}
    unknown = set(values) - set(declared)
    assert not unknown, f"/{command['name']} {sub} has no option {sorted(unknown)}"
    missing = [n for n, o in declared.items() if o.get("required") and n not in values]
    assert not missing, f"the picker does not send /{command['name']} {sub} without {missing}"
    for option_name, value in values.items():
        choices = [c["value"] for c in declared[option_name].get("choices") or []]
        assert not choices or value in choices, f"{value!r} is not one of {choices}"
    given = [{"name": n, "type": 3, "value": v} for n, v in values.items()]
    return {"name": sub, "type": SUB_COMMAND, "options": given}


def _envelope(
    record: FakeInteraction,
    kind: int,
    user: dict[str, Any],
    channel_id: int,
    guild_id: int | None,
) -> dict[str, Any]:
    """An INTERACTION_CREATE's fields but ``data``: who, where, the token."""
    data: dict[str, Any] = {
        "id": str(record.id),
        "application_id": str(APP_ID),
        "type": kind,
        "token": record.token,
        "version": 1,
        "locale": "en-US",
        "app_permissions": "0",
        "attachment_size_limit": 8 * 1024 * 1024,
        "entitlements": [],
        "authorizing_integration_owners": {"0": str(guild_id or 1)},
        "context": 0 if guild_id else 1,
        "channel_id": str(channel_id),
        "channel": {"id": str(channel_id), "type": 0 if guild_id else 1},
    }
    if guild_id is not None:
        data["guild_id"] = str(guild_id)
        data["guild_locale"] = "en-US"
        data["member"] = {
            "user": user,
            "roles": [],
            "joined_at": "2026-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "permissions": "1024",
            "flags": 0,
        }
    else:
        data["user"] = user
        data["channel"]["recipients"] = [user]
    return data

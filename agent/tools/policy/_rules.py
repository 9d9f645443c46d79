"""One rule of ``tools.policy``, as the configuration writes it, checked when it is loaded.

A rule matches a tool call when every condition it names matches (a condition
it leaves out matches anything): ``people`` (``platform:id``), ``roles``
(``admin``/``user``), ``platforms``, ``chats`` (chat ids, ``platform:chat id``,
or ``group``/``dm``) and ``tools`` (globs such as ``github__*``); ``action`` is
``allow``, ``ask`` or ``deny``.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent.tools.registry import CORE_TOOL_NAMES
from memory.errors import MemoryPathError
from memory.paths import PLATFORM_NAME, UserKey

__all__ = ["Action", "Role", "ToolRule"]

Action = Literal["allow", "ask", "deny"]
Role = Literal["admin", "user"]

CHAT_KINDS = frozenset({"group", "dm"})
"""Words ``chats`` takes besides chat ids."""

_GLOB = re.compile(r"[A-Za-z0-9_.\-*?\[\]!]+")


class ToolRule(BaseModel):
    """``{people, roles, platforms, chats, tools, action}``; first matching rule wins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    people: tuple[str, ...] = Field((), description="Person keys, platform:id.")
    roles: tuple[Role, ...] = Field((), description="admin and/or user.")
    platforms: tuple[str, ...] = Field((), description="Platform names (telegram, slack, …).")
    chats: tuple[str, ...] = Field(
        (), description="Chat ids (optionally platform:id), or group / dm."
    )
    tools: tuple[str, ...] = Field((), description="Tool name globs (github__*, fact_*).")
    action: Action

    @field_validator("people")
    @classmethod
    def _people(cls, people: tuple[str, ...]) -> tuple[str, ...]:
        keys = []
        for entry in people:
            try:
                key = UserKey.parse(entry)
            except MemoryPathError as exc:
                raise ValueError(str(exc)) from exc
            if key.chat:
                raise ValueError(f"{entry!r} is a chat's profile, not a person")
            keys.append(str(key))
        return tuple(keys)

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, platforms: tuple[str, ...]) -> tuple[str, ...]:
        names = tuple(p.strip().lower() for p in platforms)
        for name in names:
            if not PLATFORM_NAME.fullmatch(name):
                raise ValueError(f"not a platform name: {name!r}")
        return names

    @field_validator("chats")
    @classmethod
    def _chats(cls, chats: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = tuple(str(c).strip() for c in chats)
        if any(not c for c in cleaned):
            raise ValueError("a chat is a chat id, platform:chat id, group or dm")
        return tuple(c.lower() if c.lower() in CHAT_KINDS else c for c in cleaned)

    @field_validator("tools")
    @classmethod
    def _tools(cls, tools: tuple[str, ...]) -> tuple[str, ...]:
        for glob in tools:
            if not _GLOB.fullmatch(glob):
                raise ValueError(
                    f"{glob!r} is not a tool name glob (letters, digits, _ - . and * ? [ ])"
                )
            if glob in CORE_TOOL_NAMES:
                raise ValueError(
                    f"{glob!r} is always available to everyone; a rule cannot govern it"
                )
        return tools

    @model_validator(mode="before")
    @classmethod
    def _lists(cls, data: object) -> object:
        """A single value where a list goes (``people: telegram:1``) is a list of one, and
        chat ids written as numbers (``chats: [-100123]``) are ids."""
        if not isinstance(data, dict):
            return data
        fixed: dict[str, object] = {}
        for key, value in data.items():
            if key != "action" and isinstance(value, str | int):
                value = [value]
            if key in ("people", "chats") and isinstance(value, list | tuple):
                value = [str(v) if isinstance(v, int) else v for v in value]
            fixed[key] = value
        return fixed

    def matches(
        self, person: str | None, role: Role, platform: str, chat_id: str, direct: bool, tool: str
    ) -> bool:
        """Whether this rule speaks of this call (``person`` None: nobody in particular)."""
        if self.people and person not in self.people:
            return False
        if self.roles and role not in self.roles:
            return False
        if self.platforms and platform not in self.platforms:
            return False
        if self.chats and not _chat_matches(self.chats, platform, chat_id, direct):
            return False
        return not self.tools or any(fnmatchcase(tool, glob) for glob in self.tools)

    def describe(self) -> str:
        """``people telegram:1 · tools github__* → allow``, for people reading the policy."""
        parts = [
            f"{name} {', '.join(values)}"
            for name, values in (
                ("people", self.people),
                ("roles", self.roles),
                ("platforms", self.platforms),
                ("chats", self.chats),
                ("tools", self.tools),
            )
            if values
        ]
        return f"{' · '.join(parts) or 'every call'} → {self.action}"


def _chat_matches(chats: tuple[str, ...], platform: str, chat_id: str, direct: bool) -> bool:
    kind = "dm" if direct else "group"
    return any(entry in (kind, chat_id, f"{platform}:{chat_id}") for entry in chats)

"""The ``tools.mcp_servers.<name>`` settings: one MCP server the agent's tools come from.

A server is either a stdio command (``command``, ``args``, ``env``), started as a
child of the gateway, or a Streamable HTTP endpoint (``url``, ``headers``).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.settings import RESTART

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_RESULT_CHARS",
    "McpServerSettings",
    "per_person_placeholder",
    "secret_names",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds one tool call may take unless the server sets ``timeout``."""
MAX_RESULT_CHARS = 20_000
"""Characters of one tool result the model gets unless the server sets ``max_result_chars``."""

_PERSON_SECRET = re.compile(r"\{person\.secret\.([^}]*)\}")
_SECRET_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
"""As ``memory.secrets.NAME_PATTERN``: what ``/secret set NAME`` accepts."""


def per_person_placeholder(value: str) -> bool:
    """Whether ``value`` names a person's secret (``{person.secret.NAME}``)."""
    return _PERSON_SECRET.search(value) is not None


def secret_names(value: str) -> list[str]:
    """The names of the person's secrets ``value`` holds, in order."""
    return _PERSON_SECRET.findall(value)


def fill(value: str, secrets: dict[str, str]) -> str:
    """``value`` with each ``{person.secret.NAME}`` replaced by ``secrets[NAME]``."""
    return _PERSON_SECRET.sub(lambda match: secrets[match.group(1)], value)


class McpServerSettings(BaseModel):
    """One server under ``tools.mcp_servers``."""

    model_config = ConfigDict(extra="forbid")

    command: Annotated[str | None, RESTART] = Field(
        None, min_length=1, description="stdio: the program to run (a child of the gateway)."
    )
    args: Annotated[list[str], RESTART] = Field(
        default_factory=list, description="stdio: its arguments."
    )
    env: Annotated[dict[str, str], RESTART] = Field(
        default_factory=dict,
        description="stdio: variables set for it (besides PATH, HOME and the like).",
    )
    url: Annotated[str | None, RESTART] = Field(
        None, pattern=r"^https?://", description="Streamable HTTP: the server's endpoint."
    )
    headers: Annotated[dict[str, str], RESTART] = Field(
        default_factory=dict, description="Streamable HTTP: headers sent with every request."
    )
    timeout: Annotated[float, RESTART] = Field(
        DEFAULT_TIMEOUT, gt=0, le=3600, description="Seconds one tool call may take."
    )
    enabled: Annotated[bool, RESTART] = True
    max_result_chars: Annotated[int, RESTART] = Field(
        MAX_RESULT_CHARS, ge=100, description="A longer result is cut, and the model told so."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (a stdio server) or url (Streamable HTTP)")
        if self.command is None and (self.args or self.env):
            raise ValueError("args and env are for a stdio server (command)")
        if self.url is None and self.headers:
            raise ValueError("headers are for a Streamable HTTP server (url)")
        for where, values in (("env", self.env), ("headers", self.headers)):
            for key, value in values.items():
                for name in secret_names(value):
                    if not _SECRET_NAME.fullmatch(name):
                        raise ValueError(
                            f"{where}.{key}: {{person.secret.{name[:70]}}} is not a secret "
                            "name (capital letters, digits and _, starting with a letter)"
                        )
        return self

    @property
    def per_person(self) -> bool:
        """Whether its ``headers``/``env`` name a person's secret: each person's calls then
        go to a connection of their own, made with their secrets."""
        return any(per_person_placeholder(v) for v in (*self.headers.values(), *self.env.values()))

    def secrets_needed(self) -> list[str]:
        """The names of the person's secrets it needs, sorted."""
        values = (*self.headers.values(), *self.env.values())
        return sorted({name for value in values for name in secret_names(value)})

    def for_person(self, secrets: dict[str, str]) -> McpServerSettings:
        """These settings with a person's secrets in the ``headers``/``env`` values."""
        return self.model_copy(
            update={
                "headers": {k: fill(v, secrets) for k, v in self.headers.items()},
                "env": {k: fill(v, secrets) for k, v in self.env.items()},
            }
        )

    def without_person(self) -> McpServerSettings:
        """These settings with no person's secret: a header or variable naming one is left
        out (to list the tools, which needs no one's credential)."""
        return self.model_copy(
            update={
                "headers": {k: v for k, v in self.headers.items() if not per_person_placeholder(v)},
                "env": {k: v for k, v in self.env.items() if not per_person_placeholder(v)},
            }
        )

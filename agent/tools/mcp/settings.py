"""The ``tools.mcp_servers.<name>`` settings: one MCP server the agent's tools come from.

A server is either a stdio command (``command``, ``args``, ``env``), started as a
child of the gateway, or a Streamable HTTP endpoint (``url``, ``headers``).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.settings import RESTART

__all__ = ["DEFAULT_TIMEOUT", "MAX_RESULT_CHARS", "McpServerSettings", "per_person_placeholder"]

DEFAULT_TIMEOUT = 30.0
"""Seconds one tool call may take unless the server sets ``timeout``."""
MAX_RESULT_CHARS = 20_000
"""Characters of one tool result the model gets unless the server sets ``max_result_chars``."""

_PERSON_SECRET = re.compile(r"\{person\.secret\.[^}]*\}")


def per_person_placeholder(value: str) -> bool:
    """Whether ``value`` names a person's secret (``{person.secret.NAME}``)."""
    return _PERSON_SECRET.search(value) is not None


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
                if per_person_placeholder(value):
                    raise ValueError(
                        f"{where}.{key} names a person's secret: per-person secrets are "
                        "not available yet"
                    )
        return self

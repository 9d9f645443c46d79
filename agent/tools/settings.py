"""The ``tools`` section: where the agent's tools come from and who may use them, declared
here and composed by ``gateway.config``."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent.tools.mcp.settings import McpServerSettings
from agent.tools.policy import ToolRule
from memory.settings import LIVE, RESTART

__all__ = ["ToolsSettings"]

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class ToolsSettings(BaseModel):
    """The ``tools`` section: the agent's tools beyond its memory, and who may use them."""

    model_config = ConfigDict(extra="forbid")

    mcp_servers: Annotated[dict[str, McpServerSettings], RESTART] = Field(
        default_factory=dict,
        description="MCP servers whose tools the agent may call, by name; a tool is "
        "offered to the model as <server>__<tool>.",
    )
    idle_seconds: Annotated[float, RESTART] = Field(
        300.0,
        gt=0,
        description="A person's own connection to a server that takes their secrets (a stdio "
        "server's process of theirs) is stopped after this many seconds without a call.",
    )
    policy: Annotated[list[ToolRule], LIVE] = Field(
        default_factory=list,
        description="Ordered rules (people, roles, platforms, chats, tools → allow, ask or "
        "deny); the first that matches decides. Without one: tools of MCP servers for "
        "admins only, every other tool for everyone.",
    )

    approval: Annotated[Literal["person", "admin"], LIVE] = Field(
        "person",
        description="Who approves a call to an `ask` tool: the person whose turn it is "
        "(in that chat), or the admins (in a direct message).",
    )
    approval_timeout: Annotated[float, LIVE] = Field(
        120.0,
        gt=0,
        le=3600,
        description="Seconds a call to an `ask` tool waits for approval; no answer is a refusal.",
    )

    @field_validator("mcp_servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in servers:
            if not _SERVER_NAME.match(name):
                raise ValueError(
                    f"server name {name!r}: use 1-40 letters, digits, '_' or '-' "
                    "(it prefixes the names of its tools)"
                )
        return servers

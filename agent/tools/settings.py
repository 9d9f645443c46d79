"""The ``tools`` section: where the agent's tools come from, declared here and composed by
``gateway.config``."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent.tools.mcp.settings import McpServerSettings
from memory.settings import RESTART

__all__ = ["ToolsSettings"]

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class ToolsSettings(BaseModel):
    """The ``tools`` section."""

    model_config = ConfigDict(extra="forbid")

    mcp_servers: Annotated[dict[str, McpServerSettings], RESTART] = Field(
        default_factory=dict,
        description="MCP servers whose tools the agent may call, by name; a tool is "
        "offered to the model as <server>__<tool>.",
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

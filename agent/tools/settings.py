"""The ``tools`` section of the configuration, declared by the layer that uses it."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agent.tools.policy import ToolRule
from memory.settings import LIVE

__all__ = ["ToolsSettings"]


class ToolsSettings(BaseModel):
    """The ``tools`` section: the agent's tools beyond its memory, and who may use them."""

    model_config = ConfigDict(extra="forbid")

    policy: Annotated[list[ToolRule], LIVE] = Field(
        default_factory=list,
        description="Ordered rules (people, roles, platforms, chats, tools → allow, ask or "
        "deny); the first that matches decides. Without one: tools of MCP servers for "
        "admins only, every other tool for everyone.",
    )

"""Name → (JSON schema, handler) for tools that need no per-session state.

The two core tools, ``memory`` and ``session_search``, are bound to one
session's store and user, so the agent runs them itself; their names are
reserved here so that no registered tool (or memory provider) can shadow them.
Whatever goes wrong — an unknown name, arguments that are not JSON, a handler
that raises — the model gets an error result, never an exception.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.errors import AgentError
from agent.llm import parse_arguments

logger = logging.getLogger(__name__)

CORE_TOOL_NAMES = frozenset({"memory", "session_search"})
"""Names no registered tool or provider may take."""

ToolHandler = Callable[[dict[str, Any]], Awaitable[str] | str]


def tool_error(message: str) -> str:
    """The JSON text of a failed tool call, as the model sees it."""
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def function_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``tools`` entry."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler

    @property
    def schema(self) -> dict[str, Any]:
        return function_schema(self.name, self.description, self.parameters)


class ToolRegistry:
    """Tools shared by every agent of the process."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        if tool.name in CORE_TOOL_NAMES:
            raise AgentError(f"tool name {tool.name!r} is reserved for a core tool")
        if tool.name in self._tools:
            raise AgentError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def has(self, name: str) -> bool:
        return name in self._tools

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [self._tools[name].schema for name in self.names]

    async def dispatch(self, name: str, raw_arguments: str) -> str:
        tool = self._tools.get(name)
        if tool is None:
            return tool_error(
                f"unknown tool {name!r}; available: {', '.join(self.names) or 'none'}"
            )
        try:
            arguments = parse_arguments(raw_arguments)
        except ValueError as exc:
            return tool_error(f"{name}: {exc}")
        try:
            result = tool.handler(arguments)
            if inspect.isawaitable(result):
                result = await result
        except Exception:
            logger.exception("tool %s failed", name)
            return tool_error(f"{name} failed with an internal error")
        return str(result)

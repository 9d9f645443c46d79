"""Name → (JSON schema, handler) for tools that need no per-session state.

The two core tools, ``memory`` and ``session_search``, are bound to one
session's store and user, so the agent runs them itself; their names are
reserved here so that no registered tool (or memory provider) can shadow them.
Whatever goes wrong — an unknown name, arguments that are not JSON, a handler
that raises — the model gets an error result, never an exception.

Tools whose list changes while the process runs (an MCP server's) come from a
``ToolSource`` the registry is built with; ``dispatch`` is the one place every call
of a registered or sourced tool goes through.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.errors import AgentError
from agent.llm_answer import parse_arguments

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


class ToolSource(Protocol):
    """Tools that come and go (an MCP server's): listed at each request, called by name."""

    def schemas(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` entries offered now."""
        ...

    def has(self, name: str) -> bool: ...

    async def call(self, name: str, arguments: dict[str, Any], person: str | None = None) -> str:
        """The result text for the model; an error result, never an exception. ``person``
        (``platform:id``; None: no one person) is whose call it is."""
        ...


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

    def __init__(self, sources: Sequence[ToolSource] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources = list(sources)

    def register(self, tool: Tool) -> None:
        if tool.name in CORE_TOOL_NAMES:
            raise AgentError(f"tool name {tool.name!r} is reserved for a core tool")
        if tool.name in self._tools:
            raise AgentError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def _source_of(self, name: str) -> ToolSource | None:
        if name in CORE_TOOL_NAMES or name in self._tools:
            return None
        return next((source for source in self._sources if source.has(name)), None)

    def has(self, name: str) -> bool:
        return name in self._tools or self._source_of(name) is not None

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        listed = [self._tools[name].schema for name in self.names]
        for source in self._sources:
            listed += [s for s in source.schemas() if s["function"]["name"] not in self._tools]
        return listed

    async def dispatch(self, name: str, raw_arguments: str, person: str | None = None) -> str:
        """Run ``name`` for ``person`` (whose turn it is; a source that acts with each
        person's credentials needs to know)."""
        tool = self._tools.get(name)
        source = self._source_of(name) if tool is None else None
        if tool is None and source is None:
            offered = [s["function"]["name"] for s in self.schemas()]
            return tool_error(f"unknown tool {name!r}; available: {', '.join(offered) or 'none'}")
        try:
            arguments = parse_arguments(raw_arguments)
        except ValueError as exc:
            return tool_error(f"{name}: {exc}")
        try:
            if source is not None:
                return await source.call(name, arguments, person)
            assert tool is not None
            result = tool.handler(arguments)
            if inspect.isawaitable(result):
                result = await result
        except Exception:
            logger.exception("tool %s failed", name)
            return tool_error(f"{name} failed with an internal error")
        return str(result)

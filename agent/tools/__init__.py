"""Tools the model can call: a registry plus the two core tools every agent has.

The names are imported on first use, so that reading the ``tools`` settings
(``agent.tools.settings``) does not load the LLM client the registry needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.tools.registry import CORE_TOOL_NAMES, Tool, ToolRegistry, tool_error

__all__ = ["CORE_TOOL_NAMES", "Tool", "ToolRegistry", "tool_error"]

_HOME = dict.fromkeys(__all__, "agent.tools.registry")


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOME[name]), name)
    globals()[name] = value
    return value

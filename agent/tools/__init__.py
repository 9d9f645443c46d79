"""Tools the model can call: a registry plus the two core tools every agent has."""

from agent.tools.registry import CORE_TOOL_NAMES, Tool, ToolRegistry, tool_error

__all__ = ["CORE_TOOL_NAMES", "Tool", "ToolRegistry", "tool_error"]

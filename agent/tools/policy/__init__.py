"""Who may use which tool: the ``tools.policy`` rules, and the gate every tool call passes.

- ``ToolRule``: one configured rule, validated when the configuration is loaded.
- ``ToolPolicy``: ``decide(person, role, platform, chat, tool) -> Decision``.
- ``ToolGate``: one session's gate — which tools a request offers, and whether a
  call may run (a tool not offered in that request, or not allowed, is refused
  and audited).
"""

from agent.tools.policy._approval import ApprovalRequest, Approver
from agent.tools.policy._gate import ToolGate, offered_names, refuse_not_offered
from agent.tools.policy._policy import (
    DEFAULTS,
    MCP_SEPARATOR,
    ChatPlace,
    Decision,
    ToolPolicy,
    is_mcp_tool,
)
from agent.tools.policy._rules import Action, Role, ToolRule

__all__ = [
    "DEFAULTS",
    "MCP_SEPARATOR",
    "Action",
    "ApprovalRequest",
    "Approver",
    "ChatPlace",
    "Decision",
    "Role",
    "ToolGate",
    "ToolPolicy",
    "ToolRule",
    "is_mcp_tool",
    "offered_names",
    "refuse_not_offered",
]

"""``ToolPolicy``: who may use which tool, where — the ``tools.policy`` rules plus the defaults.

Rules are tried in order and the first that matches decides. When none does,
the defaults decide: a tool of an MCP server (named ``<server>__<tool>``) is
for admins only; every other tool (a memory provider's, a registered one) is
for everyone. The core tools, ``memory`` and ``session_search``, are always
allowed and no rule reaches them.

``ask`` means "only with someone's approval": the tool is offered, and each call
waits for the approver (``ToolGate.approver``); without one it is treated as denied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.tools.policy._rules import Action, Role, ToolRule
from agent.tools.registry import CORE_TOOL_NAMES

__all__ = ["MCP_SEPARATOR", "ChatPlace", "Decision", "ToolPolicy", "is_mcp_tool"]

MCP_SEPARATOR = "__"
"""Between an MCP server's name and its tool's: ``github__create_issue``."""

DEFAULTS = (
    "otherwise: tools of MCP servers (<server>__<tool>) → allow for admins, deny for "
    "others; every other tool → allow"
)
"""The defaults, in words, for the commands that show the policy."""


def is_mcp_tool(name: str) -> bool:
    """A tool of an MCP server: ``<server>__<tool>``."""
    server, sep, tool = name.partition(MCP_SEPARATOR)
    return bool(server and sep and tool)


@dataclass(frozen=True)
class ChatPlace:
    """The chat a call is made in: its id and whether it is a direct message."""

    id: str
    direct: bool


@dataclass(frozen=True)
class Decision:
    """What the policy says about one tool for one person in one chat."""

    tool: str
    action: Action
    rule: int | None
    """The number (from 1) of the rule that decided; None: a default or a core tool."""

    @property
    def allowed(self) -> bool:
        return self.action == "allow"

    @property
    def source(self) -> str:
        """``rule 2``, ``default`` or ``core``, for the people reading it."""
        if self.rule is not None:
            return f"rule {self.rule}"
        return "core" if self.tool in CORE_TOOL_NAMES else "default"


class ToolPolicy:
    """The ordered rules of ``tools.policy``; ``decide`` is pure and cheap.

    The rules never change (a reload builds a new policy), so each decision is kept:
    every request of a turn asks again for every tool of the session, and the rules
    are walked once per person, chat and tool (at most ``REMEMBERED`` at a time)."""

    REMEMBERED = 10_000

    def __init__(self, rules: Sequence[ToolRule] = ()) -> None:
        self.rules = tuple(rules)
        self._decided: dict[tuple[str | None, str, str, ChatPlace, str], Decision] = {}

    def decide(
        self, person: str | None, role: Role, platform: str, chat: ChatPlace, tool: str
    ) -> Decision:
        """``allow``, ``ask`` or ``deny`` for ``person`` (``platform:id``; None: nobody in
        particular, as in a turn several people wrote) as ``role``, calling ``tool`` in
        ``chat``."""
        key = (person, role, platform, chat, tool)
        decision = self._decided.get(key)
        if decision is None:
            if len(self._decided) >= self.REMEMBERED:
                self._decided.clear()
            decision = self._decided[key] = self._decide(person, role, platform, chat, tool)
        return decision

    def _decide(
        self, person: str | None, role: Role, platform: str, chat: ChatPlace, tool: str
    ) -> Decision:
        if tool in CORE_TOOL_NAMES:
            return Decision(tool, "allow", None)
        for number, rule in enumerate(self.rules, 1):
            if rule.matches(person, role, platform, chat.id, chat.direct, tool):
                return Decision(tool, rule.action, number)
        if is_mcp_tool(tool):
            return Decision(tool, "allow" if role == "admin" else "deny", None)
        return Decision(tool, "allow", None)

    def rules_for(self, person: str, role: Role, platform: str) -> list[tuple[int, ToolRule]]:
        """The rules that can apply to this person (whatever the chat or tool), numbered."""
        return [
            (number, rule)
            for number, rule in enumerate(self.rules, 1)
            if (not rule.people or person in rule.people)
            and (not rule.roles or role in rule.roles)
            and (not rule.platforms or platform in rule.platforms)
        ]

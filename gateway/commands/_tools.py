"""``/tools`` and ``/admin tools [PERSON]``: the tool policy as it applies to a person.

``/tools`` answers the asking person, for the chat they ask in: the tools they may
use there and those that need an approval. ``/admin tools`` shows the configured
rules in order; with a person, the rules that can apply to them and what each
tool comes to for them in a direct message and in a group.
"""

from __future__ import annotations

from agent.tools.policy import DEFAULTS, ChatPlace, Decision, Role, ToolPolicy
from gateway.access import AdminReply, admin_checker, normalize_user_key
from gateway.commands._registry import Command, CommandContext

__all__ = ["TOOLS_COMMAND", "tools_sub"]

ALWAYS = "Always: memory, session_search."
YOURS = "Tools you can use here:"
NONE_HERE = "No tools beyond memory and session search for you here."
NEED_APPROVAL = "Need approval each time: {names}"
RULES = "tools.policy (first match wins; rule numbers count from 1):"
NO_RULES = "tools.policy has no rules: the defaults decide."
FOR_PERSON = "Tool policy for {person} ({role}):"
THEIR_RULES = "Rules that can apply to them:"
NO_RULE_FOR_THEM = "No rule names them, their role or their platform: the defaults decide."
NOT_A_PERSON = "{arg!r} is not a person's key: give platform:id (e.g. telegram:12345)."
NO_TOOLS = "No tools are known yet beyond memory and session search."
HERE = "in this group"
IN_GROUPS = "in a group"


def _role(is_admin: bool) -> Role:
    return "admin" if is_admin else "user"


def _policy(ctx: CommandContext) -> ToolPolicy:
    return ToolPolicy(ctx.services.settings.tools.policy)


async def tools_command(ctx: CommandContext) -> str:
    msg = ctx.msg
    policy = _policy(ctx)
    chat = ChatPlace(msg.chat_id, msg.is_direct)
    decisions = [
        policy.decide(str(ctx.user_key), _role(ctx.is_admin), msg.platform, chat, name)
        for name in await ctx.services.tool_names(msg)
    ]
    allowed = [d.tool for d in decisions if d.action == "allow"]
    asked = [d.tool for d in decisions if d.action == "ask"]
    lines = [YOURS, *(f"• {name}" for name in allowed)] if allowed else [NONE_HERE]
    if asked:
        lines.append(NEED_APPROVAL.format(names=", ".join(asked)))
    lines.append(ALWAYS)
    return "\n".join(lines)


TOOLS_COMMAND = Command(
    "tools",
    "the tools I may use for you here (and which need approval)",
    tools_command,
    admin_only=False,
    private=True,
)


async def tools_sub(ctx: CommandContext, arg: str) -> str:
    policy = _policy(ctx)
    if not arg:
        if not policy.rules:
            return f"{NO_RULES}\n{DEFAULTS}"
        rules = (f"{n}. {rule.describe()}" for n, rule in enumerate(policy.rules, 1))
        return "\n".join([RULES, *rules, DEFAULTS])
    person = normalize_user_key(arg)
    if person is None:
        return AdminReply(NOT_A_PERSON.format(arg=arg), ok=False, outcome="usage")
    role = _role(admin_checker(ctx.services.settings.auth.admins)(person))
    platform = person.partition(":")[0]
    lines = [FOR_PERSON.format(person=person, role=role)]
    names = await ctx.services.tool_names(ctx.msg)
    msg = ctx.msg
    here = not msg.is_direct and msg.platform == platform  # asked in a group they can be in
    group = ChatPlace(msg.chat_id if here else "", False)
    where = HERE if here else IN_GROUPS
    dm = ChatPlace(person.partition(":")[2], True)
    for name in names:
        in_dm = policy.decide(person, role, platform, dm, name)
        in_group = policy.decide(person, role, platform, group, name)
        lines.append(f"• {name}: in a DM {_said(in_dm)} · {where} {_said(in_group)}")
    if not names:
        lines.append(NO_TOOLS)
    theirs = policy.rules_for(person, role, platform)
    lines.append(THEIR_RULES if theirs else NO_RULE_FOR_THEM)
    lines.extend(f"{n}. {rule.describe()}" for n, rule in theirs)
    lines.append(DEFAULTS)
    return AdminReply("\n".join(lines), ok=True, subject=person)


def _said(decision: Decision) -> str:
    return f"{decision.action} ({decision.source})"

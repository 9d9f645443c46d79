"""``/admin <sub>``: operating chorus from the chat. Every call is audited."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from agent.jobs import approved_write_job
from gateway.access import AdminReply, RequestStatus, UserAccessRow
from gateway.command_menu import MenuOption, MenuSubcommand
from gateway.commands import _texts as t
from gateway.commands._flagged import flagged_command
from gateway.commands._link import link_sub, unlink_sub
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from gateway.commands._review import review
from gateway.commands._tools import tools_sub
from gateway.commands._usage import budget_sub, usage_sub
from gateway.commands._user import profile_usage
from memory.paths import UserKey
from memory.store import FlaggedEntries, MemoryStore, StagedWrite, make_visible
from plugins.memory import discover_memory_providers

SubHandler = Callable[[CommandContext, str], Awaitable[str]]


async def sessions_sub(ctx: CommandContext, _: str) -> str:
    now = ctx.services.clock.time()
    live = sorted(ctx.services.sessions.sessions, key=lambda s: s.last_active, reverse=True)
    if not live:
        return t.NO_SESSIONS
    lines = [f"{len(live)} open session(s):"]
    for s in live[:50]:
        state = "busy" if s.busy else ("live" if s.agent is not None else "idle")
        lines.append(
            f"{s.session_id[:8]} {s.user_key} {state}, age {int(now - s.started_at) // 60}m, "
            f"idle {int(now - s.last_active) // 60}m, {s.turns} turn(s)"
        )
    return "\n".join(lines)


async def end_sub(ctx: CommandContext, target: str) -> str:
    if not target:
        return usage_of("end")
    sessions = ctx.services.sessions
    matches = [s for s in sessions.sessions if target in (s.user_key, s.session_id)]
    matches += [
        s for s in sessions.sessions if s.session_id.startswith(target) and s not in matches
    ]
    for live in matches:
        await sessions.end(live, "admin", notify_next=False)
    if not matches:
        return AdminReply(t.NO_MATCH.format(target=target), ok=False, outcome="not_found")
    return t.ENDED.format(n=len(matches))


async def users_sub(ctx: CommandContext, _: str) -> str:
    rows = await asyncio.to_thread(ctx.services.access.users)
    if not rows:
        return t.NO_USERS
    return "\n".join(_user_line(row) for row in rows)


def _user_line(row: UserAccessRow) -> str:
    """``telegram:5 — allowed by telegram:1 on 2026-11-30 10:00 UTC``; config rows say so."""
    if row.source == "config":
        return f"{row.user_key} — {row.state} (config)"
    line = f"{row.user_key} — {row.state}"
    if row.by:
        line += f" by {row.by}"
    if row.at is not None:
        line += " on " + datetime.fromtimestamp(row.at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return line


async def allow_sub(ctx: CommandContext, arg: str) -> str:
    reply = await asyncio.to_thread(ctx.services.access.allow, arg.strip(), str(ctx.user_key))
    return await _settle_requests(ctx, reply, "approved")


async def deny_sub(ctx: CommandContext, arg: str) -> str:
    pairing = ctx.services.pairing
    if arg.startswith("#") and pairing is not None:  # a pairing request's Deny
        return await pairing.deny(arg, str(ctx.user_key))
    reply = await asyncio.to_thread(ctx.services.access.deny, arg.strip(), str(ctx.user_key))
    return await _settle_requests(ctx, reply, "denied")


async def approve_sub(ctx: CommandContext, arg: str) -> str:
    if not arg:
        return usage_of("approve")
    pairing = ctx.services.pairing
    if arg.startswith("#") and pairing is not None:  # a pairing request's Approve
        return await pairing.approve(arg, str(ctx.user_key))
    reply = await asyncio.to_thread(ctx.services.access.approve_code, arg, str(ctx.user_key))
    return await _settle_requests(ctx, reply, "approved")


async def _settle_requests(ctx: CommandContext, reply: AdminReply, status: RequestStatus) -> str:
    """The person's pending pairing requests are decided too: they and the admins are told."""
    pairing = ctx.services.pairing
    if reply.ok and reply.subject and pairing is not None:
        await pairing.settled(reply.subject, status, str(ctx.user_key))
    return reply


def _shared_store(ctx: CommandContext) -> MemoryStore:
    return ctx.services.store_for(None)


async def memory_sub(ctx: CommandContext, arg: str) -> str:
    store = _shared_store(ctx)
    action, _, text = arg.partition(" ")
    if action in ("pending", "show", "approve", "reject"):
        staging = ctx.services.staging
        if staging is None:
            return t.NO_STAGING
        by = str(ctx.user_key)

        def profile_store(key: str) -> MemoryStore:
            return ctx.services.store_for(UserKey.parse(key))

        approved: list[StagedWrite] = []
        reviewed = await asyncio.to_thread(
            review,
            staging,
            store,
            action,
            text.strip(),
            by,
            profile_store=profile_store,
            on_approved=approved.append,
        )
        for write in approved:  # the providers of the write's session hear of it
            ctx.services.queue.enqueue(approved_write_job(write.session_id, write.id))
        return reviewed
    if action == "flagged":
        decision, _, entry_id = text.strip().partition(" ")
        flagged = FlaggedEntries(store.files, store.memory_path.parent)
        return await asyncio.to_thread(flagged_command, flagged, decision, entry_id.strip())
    if action in ("add", "remove") and text.strip():
        edit = store.add if action == "add" else store.remove
        result = await asyncio.to_thread(edit, "memory", text.strip())
        reply = result["message"] + f" [{result['usage']}]"
        if result["success"]:
            return reply
        missing = action == "remove" and not any(text.strip() in e for e in result["entries"])
        return AdminReply(reply, ok=False, outcome="not_found" if missing else "refused")
    if action and action not in ("add", "remove"):
        return usage_of("memory")
    await asyncio.to_thread(store.load_from_disk)
    if not store.memory_entries:
        return t.SHARED_EMPTY
    entries = "\n".join(f"• {make_visible(e)}" for e in store.memory_entries)
    return f"MEMORY.md [{profile_usage(store, 'memory')}]:\n{entries}"


async def stats_sub(ctx: CommandContext, _: str) -> str:
    return "\n".join(await ctx.services.stats_lines())


async def status_sub(ctx: CommandContext, _: str) -> str:
    return "\n".join(await ctx.services.status_lines())


async def queue_sub(ctx: CommandContext, arg: str) -> str:
    queue = ctx.services.queue
    if arg == "retry-failed":
        count = await asyncio.to_thread(queue.retry_failed)
        return t.REQUEUED.format(n=count)
    status = await asyncio.to_thread(queue.status)
    lines = [
        f"{status.backend}{'' if status.reachable else ' (UNREACHABLE)'}: {status.queued} queued, "
        f"{status.started} running, {status.deferred} waiting, {status.failed} failed, "
        f"{status.outbox} in outbox"
    ]
    lines += [f"✗ {j.job_id} ({j.func}): {j.error}" for j in status.failed_jobs[:10]]
    return "\n".join(lines)


async def provider_sub(ctx: CommandContext, _: str) -> str:
    settings = ctx.services.settings
    name = settings.memory.provider
    if not name:
        return t.BUILTIN_ONLY
    infos = await asyncio.to_thread(discover_memory_providers, settings.home, name)
    info = next((i for i in infos if i.name == name), None)
    if info is None:
        return t.PROVIDER_MISSING.format(name=name)
    state = "available" if info.available else f"NOT available ({info.error or 'unknown'})"
    return t.PROVIDER_STATE.format(name=name, source=info.source, state=state)


async def reload_sub(ctx: CommandContext, _: str) -> str:
    return await ctx.services.reload()


async def help_sub(_: CommandContext, __: str) -> str:
    return "\n".join(f"/admin {_call(sub)} — {sub.help}" for sub in ADMIN_SUBCOMMANDS)


@dataclass(frozen=True)
class AdminSubcommand:
    """One ``/admin`` subcommand: the usage text, the hints and the dispatch all come from these."""

    name: str
    usage: str
    """What follows the name ("" for nothing), e.g. ``<platform:id|session id>``."""
    handler: SubHandler
    help: str
    """One line for ``/admin help``."""
    options: tuple[MenuOption, ...] = ()
    """Its arguments as a command picker offers them (``usage`` typed out)."""


PERSON = MenuOption("person", "platform:id, e.g. discord:1234")
ADMIN_SUBCOMMANDS: tuple[AdminSubcommand, ...] = (
    AdminSubcommand("sessions", "", sessions_sub, "the open sessions, most recent first"),
    AdminSubcommand(
        "end",
        "<platform:id|session id>",
        end_sub,
        "end a person's sessions or one session",
        (MenuOption("target", "platform:id or a session id"),),
    ),
    AdminSubcommand("users", "", users_sub, "who may use the bot, and who allowed them"),
    AdminSubcommand("allow", "<platform:id>", allow_sub, "let someone use the bot", (PERSON,)),
    AdminSubcommand(
        "deny",
        "<platform:id|#request>",
        deny_sub,
        "stop someone from using the bot",
        (MenuOption("person", "platform:id, or #request of a pairing request"),),
    ),
    AdminSubcommand(
        "approve",
        "<code|#request>",
        approve_sub,
        "allow whoever was given this pairing code, or who made this pairing request",
        (MenuOption("code", "the pairing code, or #request"),),
    ),
    AdminSubcommand(
        "link",
        "<platform:id> <platform:id>",
        link_sub,
        "make two accounts one person",
        (
            MenuOption("first", "one account, platform:id"),
            MenuOption("second", "the other account, platform:id"),
        ),
    ),
    AdminSubcommand(
        "unlink", "<platform:id>", unlink_sub, "make an account its own person again", (PERSON,)
    ),
    AdminSubcommand(
        "memory",
        "[add <text>|remove <text>|pending [full]|show <id>|approve <id|all>|reject <id|all>|"
        "flagged [keep <id>|remove <id>]]",
        memory_sub,
        "show or edit the shared MEMORY.md; review the writes staged for it and for groups' "
        "shared profiles (show <id> gives a "
        "staged text whole; approve all takes only those shown whole) and the entries withheld "
        "from the prompt because they fail the threat scan",
        (
            MenuOption(
                "action",
                "what to do (nothing: show MEMORY.md)",
                required=False,
                choices=("add", "remove", "pending", "show", "approve", "reject", "flagged"),
            ),
            MenuOption(
                "text",
                "the entry text, an id, all, full, or keep/remove <id>",
                required=False,
            ),
        ),
    ),
    AdminSubcommand(
        "status", "", status_sub, "the review queue, sessions, jobs and each tool server"
    ),
    AdminSubcommand("stats", "", stats_sub, "recent activity and the counters since start"),
    AdminSubcommand(
        "queue",
        "[retry-failed]",
        queue_sub,
        "background jobs; requeue the failed ones",
        (MenuOption("action", "nothing: the state", required=False, choices=("retry-failed",)),),
    ),
    AdminSubcommand("provider", "", provider_sub, "the external memory provider and its state"),
    AdminSubcommand(
        "tools",
        "[platform:id]",
        tools_sub,
        "the tool policy, or what it comes to for a person",
        (MenuOption("person", "platform:id (nothing: the whole policy)", required=False),),
    ),
    AdminSubcommand(
        "reload", "", reload_sub, "re-read config.yaml and .env; names what needs a restart"
    ),
    AdminSubcommand(
        "usage",
        "[<platform:id>]",
        usage_sub,
        "a person's usage against limits, or everyone's this month",
        (MenuOption("person", "platform:id (nothing: everyone)", required=False),),
    ),
    AdminSubcommand(
        "budget",
        "<platform:id> tokens_per_day=N|cost_per_month=X|reset",
        budget_sub,
        "set a person's limits, or go back to the configured ones",
        (
            PERSON,
            MenuOption(
                "limit",
                "which limit, or reset",
                choices=("tokens_per_day", "cost_per_month", "reset"),
            ),
            MenuOption("value", "the new limit (not with reset)", required=False, glue="="),
        ),
    ),
    AdminSubcommand("help", "", help_sub, "this list"),
)
SUBCOMMANDS = {sub.name: sub for sub in ADMIN_SUBCOMMANDS}


def _call(sub: AdminSubcommand) -> str:
    return f"{sub.name} {sub.usage}".rstrip()


def admin_usage() -> str:
    """``/admin sessions | end <platform:id|session id> | …``, every subcommand in order."""
    return "/admin " + " | ".join(_call(sub) for sub in ADMIN_SUBCOMMANDS)


def admin_hint() -> str:
    """What ``/admin`` takes, for command pickers: the subcommands' names."""
    return ", ".join(sub.name for sub in ADMIN_SUBCOMMANDS)


def usage_of(name: str) -> AdminReply:
    usage = t.USAGE.format(usage="/admin " + _call(SUBCOMMANDS[name]))
    return AdminReply(usage, ok=False, outcome="usage")


async def admin_command(ctx: CommandContext) -> str:
    sub, _, rest = ctx.args.partition(" ")
    found = SUBCOMMANDS.get(sub.lower())
    if found is None:
        outcome = "unknown" if sub else "usage"
        return AdminReply(t.USAGE.format(usage=admin_usage()), ok=False, outcome=outcome)
    return await found.handler(ctx, rest.strip())


def _audit_args(args: str) -> str:
    """Pairing codes never reach the audit table in clear."""
    secret = args.lower().startswith("approve") and "#" not in args
    return "approve <code>" if secret else args


def admin_menu() -> tuple[MenuSubcommand, ...]:
    """Every subcommand with its arguments, for structured command pickers."""
    return tuple(MenuSubcommand(s.name, s.help, s.options) for s in ADMIN_SUBCOMMANDS)


def register_admin_commands(registry: CommandRegistry) -> None:
    registry.register(
        Command(
            "admin",
            "operate chorus (admins only)",
            admin_command,
            audit_args=_audit_args,
            args=admin_hint(),
            private=True,
            subcommands=admin_menu(),
        )
    )

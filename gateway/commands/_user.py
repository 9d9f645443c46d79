"""Commands every allowed user has."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from agent.agent import Agent
from agent.shared_writes import decide
from gateway.commands import _texts as t
from gateway.commands._delete_me import DELETE_ME_COMMAND
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from gateway.commands._tools import TOOLS_COMMAND
from gateway.commands._usage import usage_command
from gateway.sessions import LiveSession
from memory.paths import UserKey
from memory.store import ENTRY_DELIMITER, MemoryStore, StagedWrites, StagingRefused

logger = logging.getLogger(__name__)


def _help(registry: CommandRegistry) -> Command:
    async def help_command(ctx: CommandContext) -> str:
        lines = [t.HELP_HEADER]
        for command in registry.visible(ctx.is_admin, ctx.msg.platform):
            names = ", ".join(f"/{n}" for n in (command.name, *command.aliases))
            lines.append(f"{names} — {command.help}")
        return "\n".join(lines)

    return Command("help", "this list", help_command, admin_only=False)


async def start_command(ctx: CommandContext) -> str:
    """What a person's first message on Telegram is. A deep link's payload
    (``t.me/<bot>?start=PAYLOAD`` arrives as ``/start PAYLOAD``) has no meaning yet: it
    is accepted and ignored."""
    if ctx.args:
        logger.debug("/start with a %d-character deep-link payload", len(ctx.args))
    return t.START


async def new_command(ctx: CommandContext) -> str:
    ended = await ctx.services.sessions.reset(ctx.msg)
    return t.NEW_DONE if ended else t.NEW_ALREADY


async def _own_store(ctx: CommandContext) -> MemoryStore:
    services = ctx.services
    store = services.store_for(services.sessions.profile_key(ctx.msg))
    await asyncio.to_thread(store.load_from_disk)
    return store


async def status_command(ctx: CommandContext) -> str:
    services = ctx.services
    live = services.sessions.get(ctx.msg)
    store = await _own_store(ctx)
    lines = [t.STATUS_YOU.format(user_key=ctx.user_key, admin=" (admin)" if ctx.is_admin else "")]
    if live is None:
        lines.append(t.STATUS_NO_SESSION)
    else:
        now = services.clock.time()
        lines.append(
            t.STATUS_SESSION.format(
                id=live.session_id[:8],
                age=_ago(now - live.started_at),
                idle=_ago(now - live.last_active),
                turns=live.turns,
            )
        )
        if live.agent is not None:
            u = live.agent.usage
            lines.append(
                t.STATUS_TOKENS.format(
                    prompt=u.prompt_tokens, cached=u.cached_tokens, completion=u.completion_tokens
                )
            )
    lines.append(t.STATUS_PROFILE.format(usage=profile_usage(store)))
    if ctx.is_admin:
        lines.extend(await services.status_lines())
    return "\n".join(lines)


async def memory_command(ctx: CommandContext) -> str:
    store = await _own_store(ctx)
    if not store.user_entries:
        return t.MEMORY_EMPTY
    entries = "\n".join(f"• {entry}" for entry in store.user_entries)
    return f"{t.MEMORY_HEADER}\n{entries}"


async def forget_command(ctx: CommandContext) -> str:
    if not ctx.args:
        return t.FORGET_USAGE
    store = await _own_store(ctx)
    services = ctx.services
    profile = services.sessions.profile_key(ctx.msg)
    if profile.chat:  # a group's shared profile: changed as shared memory is
        policy = services.settings.memory.shared_writes
        staging = services.staging
        decision = decide(policy, ctx.is_admin, staging is not None)
        if decision == "stage" and staging is not None:
            return await _stage_forget(ctx, store, staging, profile)
        if decision != "direct":
            logger.info("/forget of %s's shared profile refused for %s", profile, ctx.user_key)
            return t.FORGET_SHARED_ADMINS
    if ctx.args.lower() == "all":
        removed = 0
        for entry in list(store.user_entries):
            result = await asyncio.to_thread(store.remove, "user", entry)
            removed += 1 if result["success"] else 0
        return t.FORGOT_ALL.format(n=removed, entries="entry" if removed == 1 else "entries")
    result = await asyncio.to_thread(store.remove, "user", ctx.args)
    if result["success"]:
        return t.FORGOT_ONE
    return t.FORGOT_NOTHING.format(reason=result["message"])


async def _stage_forget(
    ctx: CommandContext, store: MemoryStore, staging: StagedWrites, profile: UserKey
) -> str:
    """Put the removal of the entries ``/forget`` names up for an admin's review."""
    if ctx.args.lower() == "all":
        entries = list(dict.fromkeys(store.user_entries))
    else:
        needle = ctx.args.strip()
        matches = list(dict.fromkeys(e for e in store.user_entries if needle in e))
        if not matches:
            return t.FORGOT_NOTHING.format(reason=t.FORGET_NO_MATCH.format(words=needle))
        if len(matches) > 1 and needle not in matches:
            reason = t.FORGET_AMBIGUOUS.format(n=len(matches), words=needle)
            return t.FORGOT_NOTHING.format(reason=reason)
        entries = [needle if needle in matches else matches[0]]
    if not entries:
        return t.FORGOT_ALL.format(n=0, entries="entries")
    live = ctx.services.sessions.get(ctx.msg)
    staged: list[int] = []
    refused = ""
    for entry in entries:
        try:
            staged.append(
                await asyncio.to_thread(
                    staging.stage,
                    user_key=str(ctx.user_key),
                    session_id=live.session_id if live is not None else "",
                    action="remove",
                    old_text=entry,
                    max_chars=store.user_char_limit,
                    profile=str(profile),
                )
            )
        except StagingRefused as exc:
            refused = str(exc)
            break
    if not staged:
        return t.FORGOT_NOTHING.format(reason=refused)
    ids = ", ".join(f"#{i}" for i in staged)
    n = len(staged)
    reply = t.FORGET_STAGED.format(n=n, entries="entry" if n == 1 else "entries", ids=ids)
    if refused:
        reply += "\n" + t.FORGET_STAGED_SOME.format(n=len(entries) - n, reason=refused)
    return reply


async def undo_command(ctx: CommandContext) -> str:
    sessions = ctx.services.sessions
    live = sessions.get(ctx.msg)
    if live is None or live.busy:
        return t.NOTHING_TO_UNDO if live is None else t.UNDO_BUSY
    agent = await sessions.agent_for(live)
    if live.busy:  # a turn began while the agent was being built
        return t.UNDO_BUSY
    refusal = None if ctx.is_admin else _not_theirs(ctx, live, agent, "undo", "undone")
    if refusal is not None:
        return refusal
    text = await agent.undo_last_turn()
    if text is None:
        return t.UNDO_EMPTY
    return t.UNDONE


async def retry_command(ctx: CommandContext) -> str | None:
    sessions = ctx.services.sessions
    live = sessions.get(ctx.msg)
    if live is None or live.busy:
        return t.NOTHING_TO_RETRY if live is None else t.UNDO_BUSY
    agent = await sessions.agent_for(live)
    if live.busy:
        return t.UNDO_BUSY
    refusal = _not_theirs(ctx, live, agent, "retry", "retried")
    if refusal is not None:
        return refusal
    text = await agent.undo_last_turn(reason="retry")
    if not text:
        return t.NOTHING_TO_RETRY
    retry = dataclasses.replace(ctx.msg, text=text, message_id=f"{ctx.msg.message_id}:retry")
    await sessions.submit(retry)
    return None


def _not_theirs(
    ctx: CommandContext, live: LiveSession, agent: Agent, what: str, done: str
) -> str | None:
    """Why the asker may not act on the session's last turn; None when they may.

    In a session several people share, each acts on their own turns only: the last
    turn must be theirs (a turn whose messages several people wrote is nobody's).
    """
    if not live.user_key.chat:
        return None
    speakers = agent.turn_speakers()
    asker = str(ctx.user_key)
    if not speakers or speakers[-1] == asker:
        return None
    logger.info("/%s of another's turn refused for %s in session %s", what, asker, live.session_id)
    if asker in speakers:
        return t.NOT_YOUR_LAST.format(done=done)
    return t.NONE_OF_YOURS.format(what=what, done=done)


async def stop_command(ctx: CommandContext) -> str:
    live = ctx.services.sessions.get(ctx.msg)
    if live is None or not live.busy:
        return t.NOTHING_RUNNING
    shared = live.user_key.chat
    if shared and not ctx.is_admin and ctx.user_key not in live.turn_by:
        logger.info("/stop of another's turn refused in session %s", live.session_id)
        return t.STOP_NOT_YOURS
    live.cancel_turn()
    if shared:  # the others' waiting messages are still owed an answer
        live.pending[:] = [m for m in live.pending if m.user_key != ctx.user_key]
    else:
        live.pending.clear()
    return t.STOPPED


async def whoami_command(ctx: CommandContext) -> str:
    text = t.WHOAMI.format(
        user_key=ctx.user_key,
        name=ctx.msg.user_name or "no name",
        admin=", an admin" if ctx.is_admin else "",
        scope=ctx.services.settings.sessions.scope,
    )
    people = ctx.services.people
    if people is None:
        return text
    return "\n".join([text, *await people.whoami_lines(str(ctx.user_key))])


def profile_usage(store: MemoryStore, target: str = "user") -> str:
    entries = store.user_entries if target == "user" else store.memory_entries
    limit = store.user_char_limit if target == "user" else store.memory_char_limit
    used = len(ENTRY_DELIMITER.join(entries))
    return f"{min(100, used * 100 // limit)}% — {used:,}/{limit:,} chars"


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def register_user_commands(registry: CommandRegistry) -> None:
    for command in (
        Command(
            "start",
            "what I am and how to begin",
            start_command,
            admin_only=False,
            shown_on=frozenset({"telegram"}),
            to_strangers=t.GREETING,
            in_groups=False,
        ),
        _help(registry),
        Command("new", "start a new session", new_command, ("reset",), admin_only=False),
        Command(
            "status",
            "session, tokens and memory usage",
            status_command,
            admin_only=False,
            private=True,
        ),
        Command(
            "memory", "what I remember about you", memory_command, admin_only=False, private=True
        ),
        Command(
            "usage",
            "your tokens and cost today and this month, against your limits",
            usage_command,
            admin_only=False,
            private=True,
        ),
        Command(
            "forget",
            "forget an entry about you, or all (a group's shared profile may need an admin)",
            forget_command,
            admin_only=False,
            args="words from the entry, or all",
            private=True,
        ),
        Command(
            "undo",
            "forget your last message and my answer (in a shared group: your own; admins: any)",
            undo_command,
            admin_only=False,
        ),
        Command(
            "retry",
            "answer your last message again (in a shared group: your own only)",
            retry_command,
            admin_only=False,
        ),
        Command(
            "stop",
            "stop the answer being written (in a shared group: to you; admins: any)",
            stop_command,
            admin_only=False,
        ),
        Command("whoami", "who I think you are", whoami_command, admin_only=False, private=True),
        TOOLS_COMMAND,
        DELETE_ME_COMMAND,
    ):
        registry.register(command)

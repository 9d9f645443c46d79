"""Commands every allowed user has."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from gateway.commands import _texts as t
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from memory.store import ENTRY_DELIMITER, MemoryStore

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


async def undo_command(ctx: CommandContext) -> str:
    sessions = ctx.services.sessions
    live = sessions.get(ctx.msg)
    if live is None or live.busy:
        return t.NOTHING_TO_UNDO if live is None else t.UNDO_BUSY
    agent = await sessions.agent_for(live)
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
    text = await agent.undo_last_turn(reason="retry")
    if not text:
        return t.NOTHING_TO_RETRY
    retry = dataclasses.replace(ctx.msg, text=text, message_id=f"{ctx.msg.message_id}:retry")
    await sessions.submit(retry)
    return None


async def stop_command(ctx: CommandContext) -> str:
    live = ctx.services.sessions.get(ctx.msg)
    if live is not None and live.cancel_turn():
        live.pending.clear()
        return t.STOPPED
    return t.NOTHING_RUNNING


async def whoami_command(ctx: CommandContext) -> str:
    return t.WHOAMI.format(
        user_key=ctx.user_key,
        name=ctx.msg.user_name or "no name",
        admin=", an admin" if ctx.is_admin else "",
        scope=ctx.services.settings.sessions.scope,
    )


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
            "forget",
            "forget an entry about you, or all",
            forget_command,
            admin_only=False,
            args="words from the entry, or all",
            private=True,
        ),
        Command("undo", "forget your last message and my answer", undo_command, admin_only=False),
        Command("retry", "answer your last message again", retry_command, admin_only=False),
        Command("stop", "stop the answer being written", stop_command, admin_only=False),
        Command("whoami", "who I think you are", whoami_command, admin_only=False, private=True),
    ):
        registry.register(command)

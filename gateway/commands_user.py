"""Commands every allowed user has."""

from __future__ import annotations

import asyncio
import dataclasses

from gateway.commands import Command, CommandContext, CommandRegistry
from memory.paths import parse_user_key
from memory.store import ENTRY_DELIMITER, MemoryStore


async def help_command(ctx: CommandContext) -> str:
    lines = ["Commands:"]
    for command in ctx.runner.commands.visible(ctx.is_admin):
        names = ", ".join(f"/{n}" for n in (command.name, *command.aliases))
        lines.append(f"{names} — {command.help}")
    return "\n".join(lines)


async def new_command(ctx: CommandContext) -> str:
    ended = await ctx.runner.sessions.reset(ctx.msg)
    if ended:
        return "Started a new session. I still remember what I saved about you."
    return "This is already a fresh session."


async def status_command(ctx: CommandContext) -> str:
    runner = ctx.runner
    live = runner.sessions.get(ctx.msg)
    store = runner.factory.store_for(parse_user_key(runner.sessions.profile_key(ctx.msg)))
    await asyncio.to_thread(store.load_from_disk)
    usage = profile_usage(store)
    lines = [f"You are {ctx.user_key}{' (admin)' if ctx.is_admin else ''}."]
    if live is None:
        lines.append("No session yet: your next message starts one.")
    else:
        now = runner.clock.time()
        lines.append(
            f"Session {live.session_id[:8]}: started {_ago(now - live.started_at)} ago, "
            f"last active {_ago(now - live.last_active)} ago, {live.turns} turn(s)."
        )
        if live.agent is not None:
            u = live.agent.usage
            lines.append(
                f"Tokens: {u.prompt_tokens:,} in ({u.cached_tokens:,} cached), "
                f"{u.completion_tokens:,} out."
            )
    lines.append(f"Your profile: {usage}.")
    if ctx.is_admin:
        lines.extend(await runner.admin_status_lines())
    return "\n".join(lines)


async def memory_command(ctx: CommandContext) -> str:
    store = ctx.runner.factory.store_for(parse_user_key(ctx.runner.sessions.profile_key(ctx.msg)))
    await asyncio.to_thread(store.load_from_disk)
    if not store.user_entries:
        return "I don't remember anything about you yet."
    entries = "\n".join(f"• {entry}" for entry in store.user_entries)
    return f"What I remember about you:\n{entries}"


async def forget_command(ctx: CommandContext) -> str:
    if not ctx.args:
        return "Usage: /forget <words from the entry>  or  /forget all"
    store = ctx.runner.factory.store_for(parse_user_key(ctx.runner.sessions.profile_key(ctx.msg)))
    await asyncio.to_thread(store.load_from_disk)
    if ctx.args.lower() == "all":
        removed = 0
        for entry in list(store.user_entries):
            result = await asyncio.to_thread(store.remove, "user", entry)
            removed += 1 if result["success"] else 0
        return f"Forgot {removed} entr{'y' if removed == 1 else 'ies'} about you."
    result = await asyncio.to_thread(store.remove, "user", ctx.args)
    if result["success"]:
        return "Done — I forgot that."
    return f"Nothing forgotten: {result['message']}"


async def undo_command(ctx: CommandContext) -> str:
    live = ctx.runner.sessions.get(ctx.msg)
    if live is None or live.busy:
        return "Nothing to undo right now." if live is None else "Wait for the answer, or /stop."
    agent = await ctx.runner.sessions.agent_for(live)
    text = await agent.undo_last_turn()
    if text is None:
        return "Nothing to undo."
    live.turns = max(0, live.turns - 1)
    return "Undone: I forgot your last message and my answer in this session."


async def retry_command(ctx: CommandContext) -> str | None:
    live = ctx.runner.sessions.get(ctx.msg)
    if live is None or live.busy:
        return "Nothing to retry." if live is None else "Wait for the answer, or /stop."
    agent = await ctx.runner.sessions.agent_for(live)
    text = await agent.undo_last_turn()
    if not text:
        return "Nothing to retry."
    live.turns = max(0, live.turns - 1)
    retry = dataclasses.replace(ctx.msg, text=text, message_id=f"{ctx.msg.message_id}:retry")
    await ctx.runner.sessions.submit(retry)
    return None


async def stop_command(ctx: CommandContext) -> str:
    live = ctx.runner.sessions.get(ctx.msg)
    if live is not None and live.cancel_turn():
        live.pending.clear()
        return "Stopped."
    return "Nothing is running."


async def whoami_command(ctx: CommandContext) -> str:
    sessions = ctx.runner.sessions
    scope = sessions.settings.scope
    return (
        f"You are {ctx.user_key} ({ctx.msg.user_name or 'no name'})"
        f"{', an admin' if ctx.is_admin else ''}. Sessions here are per {scope}."
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
        Command("help", "this list", help_command, admin_only=False),
        Command("new", "start a new session", new_command, ("reset",), admin_only=False),
        Command("status", "session, tokens and memory usage", status_command, admin_only=False),
        Command("memory", "what I remember about you", memory_command, admin_only=False),
        Command("forget", "forget an entry about you, or all", forget_command, admin_only=False),
        Command("undo", "forget your last message and my answer", undo_command, admin_only=False),
        Command("retry", "answer your last message again", retry_command, admin_only=False),
        Command("stop", "stop the answer being written", stop_command, admin_only=False),
        Command("whoami", "who I think you are", whoami_command, admin_only=False),
    ):
        registry.register(command)

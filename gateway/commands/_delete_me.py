"""``/delete-me``: a person erases everything chorus holds of them, after confirming.

Only in a direct chat. ``/delete-me`` explains what goes and asks for
``/delete-me CONFIRM`` within :data:`CONFIRM_WINDOW` seconds; the second step
ends their open session here, runs the erasure (:mod:`gateway.commands.erasure`) and
answers with the receipt.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.commands._registry import Command, CommandContext
from gateway.commands.erasure import erase

__all__ = ["CONFIRM_WINDOW", "DELETE_ME_COMMAND"]

logger = logging.getLogger(__name__)

CONFIRM_WINDOW = 300.0
"""Seconds a ``/delete-me`` waits for its ``/delete-me CONFIRM``."""
CONFIRM_WORD = "CONFIRM"

ONLY_DIRECT = "/delete-me works in a direct chat with me only."
EXPLAIN = (
    "This erases everything I hold about you: your conversations (and their search index), "
    "your profile, your staged memory writes, your usage details, your secrets, your pairing "
    "state and what my memory service keeps of you. It cannot be undone. "
    f"To go ahead, send /delete-me {CONFIRM_WORD} within {int(CONFIRM_WINDOW // 60)} minutes."
)
EXPIRED = "There is no erasure waiting for confirmation (it expires): send /delete-me first."

_pending: dict[str, float] = {}
"""Account -> when its ``/delete-me`` expires."""


async def delete_me_command(ctx: CommandContext) -> str:
    if not ctx.msg.is_direct:
        return ONLY_DIRECT
    key, now = ctx.user_key.key, ctx.services.clock.time()
    if ctx.args.strip() != CONFIRM_WORD:
        _pending[key] = now + CONFIRM_WINDOW
        return EXPLAIN
    expires = _pending.pop(key, None)
    if expires is None or now > expires:
        return EXPIRED
    live = ctx.services.sessions.get(ctx.msg)
    if live is not None:
        await ctx.services.sessions.end(live, "erased", notify_next=False)
    receipt = await asyncio.to_thread(erase, ctx.services.settings, key, f"user:{key}")
    logger.info("a person erased their data (complete: %s)", receipt.complete)
    return receipt.text()


DELETE_ME_COMMAND = Command(
    "delete-me",
    "erase everything I hold about you (asks to confirm)",
    delete_me_command,
    ("delete_me",),  # Telegram menus and taps know only [a-z0-9_]
    admin_only=False,
    args=CONFIRM_WORD,
    in_groups=False,
)

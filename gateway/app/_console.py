"""``chorus console``: talk to the agent in a terminal, through the same runner as every chat.

The user is ``console:<os user>``. Answers stream as they are generated;
Ctrl-C stops the answer being written, never the program; Ctrl-D or ``/quit``
leaves, ending the session properly (memory flush, the providers'
``on_session_end``, the end mark) before the program exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import signal
import sys
from typing import TextIO

from gateway.adapters import ConsoleAdapter
from gateway.app._agents import require_llm_endpoint
from gateway.app._stack import open_stack
from gateway.config import Settings, require_private_home
from memory.paths import UserKey

logger = logging.getLogger(__name__)

EXIT_REASON = "console_exit"


def console_user() -> UserKey:
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = "user"
    return UserKey(ConsoleAdapter.name, name or "user")


async def run_console(
    settings: Settings, *, stdin: TextIO | None = None, out: TextIO | None = None
) -> None:
    require_llm_endpoint(settings)
    require_private_home(settings.home)
    user = console_user()
    adapter = ConsoleAdapter(
        user.id, stdin=stdin, out=out or sys.stdout, files_dir=settings.home / "exports"
    )
    stack = await open_stack(settings, adapters=[adapter])
    runner = stack.runner
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, adapter.interrupt)
    try:
        await stack.start()
        await adapter.run(
            f"chorus console — talking as {user.key}. /help for commands.\n",
            idle=lambda: runner.sessions.quiet,
        )
        sessions = list(runner.sessions.sessions)
        if any(s.turns >= settings.memory.flush_min_turns for s in sessions):
            adapter.write("(saving what is worth remembering…)\n")
        for live in sessions:
            await runner.sessions.end(live, EXIT_REASON, notify_next=False)
        await runner.shutdown()
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await stack.close()
    adapter.write("Bye.\n")

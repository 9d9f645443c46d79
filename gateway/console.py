"""``chorus console``: talk to the agent in a terminal.

The user is ``console:<os user>``. Answers stream as they are generated.
Ctrl-C interrupts the answer being written, never the program; Ctrl-D or
``/quit`` leaves, ending the session properly (memory flush, then the session
is marked ended).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import signal
import sys
import threading
from typing import TextIO

from agent.agent import Agent, SessionContext
from gateway.agent_factory import AgentFactory, new_session_id, require_llm_endpoint
from gateway.background import start_background
from gateway.config import Settings
from memory.paths import ChorusPaths, UserRef
from memory.session_db_async import AsyncSessionDB

logger = logging.getLogger(__name__)

PLATFORM = "console"
HELP = (
    "/new      start a new session (memories are kept)\n"
    "/memory   show what I remember about you\n"
    "/quit     leave (Ctrl-D works too); Ctrl-C stops an answer"
)


def console_user() -> UserRef:
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = "user"
    return UserRef(PLATFORM, name or "user")


class _LineReader:
    """Lines from a blocking stream, delivered to the event loop by a daemon thread."""

    def __init__(self, stream: TextIO, loop: asyncio.AbstractEventLoop) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._stream = stream
        self._loop = loop
        threading.Thread(target=self._pump, name="console-stdin", daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                line = self._stream.readline()
            except (OSError, ValueError):
                line = ""
            self._loop.call_soon_threadsafe(self._queue.put_nowait, line or None)
            if not line:
                return

    async def readline(self) -> str | None:
        """The next line without its newline; None at end of input."""
        line = await self._queue.get()
        return None if line is None else line.rstrip("\r\n")


class ConsoleChat:
    def __init__(self, factory: AgentFactory, user: UserRef, out: TextIO) -> None:
        self.factory = factory
        self.user = user
        self.out = out
        self.agent: Agent | None = None
        self.turn: asyncio.Task[str] | None = None

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    async def new_session(self) -> Agent:
        session = SessionContext(
            session_id=new_session_id(),
            user_key=self.user.key,
            platform=PLATFORM,
            chat_id=self.user.user_id,
        )
        agent = self.factory.agent_for(session)
        await agent.start()
        self.agent = agent
        return agent

    async def end_session(self, reason: str) -> None:
        agent, self.agent = self.agent, None
        if agent is None:
            return
        if agent.turns >= self.factory.settings.memory.flush_min_turns:
            self.write("(saving what is worth remembering…)\n")
        await agent.close()
        if self.factory.scheduler is None:
            await agent.end(reason)
        else:  # flush, provider on_session_end and the end mark, as a durable job
            self.factory.scheduler.end_session(agent.session.session_id, reason)

    def interrupt(self) -> None:
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
        else:
            self.write("\n(type /quit or press Ctrl-D to leave)\nyou> ")

    async def answer(self, text: str) -> None:
        agent = self.agent or await self.new_session()
        streamed: list[str] = []

        def on_delta(delta: str) -> None:
            streamed.append(delta)
            self.write(delta)

        self.write("chorus> ")
        self.turn = asyncio.create_task(agent.run_turn(text, on_delta=on_delta))
        try:
            reply = await self.turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the console itself is being stopped
            self.write("\n[interrupted]\n")
            return
        finally:
            self.turn = None
        if "".join(streamed).endswith(reply):
            self.write("\n")
        else:  # apologies and limit messages are not streamed
            self.write(("\n" if streamed else "") + reply + "\n")

    def show_memory(self) -> None:
        store = self.factory.store_for(self.user)
        store.load_from_disk()
        entries = store.user_entries
        if not entries:
            self.write("I don't remember anything about you yet.\n")
            return
        self.write("What I remember about you:\n")
        for entry in entries:
            self.write(f"  • {entry}\n")

    async def run(self, stdin: TextIO) -> None:
        reader = _LineReader(stdin, asyncio.get_running_loop())
        agent = await self.new_session()
        self.write(
            f"chorus console — talking as {self.user.key} "
            f"(session {agent.session.session_id[:8]}). /help for commands.\n"
        )
        while True:
            self.write("you> ")
            line = await reader.readline()
            if line is None:
                self.write("\n")
                break
            text = line.strip()
            if not text:
                continue
            command = text.split()[0].lower()
            if command in ("/quit", "/exit"):
                break
            if command == "/help":
                self.write(HELP + "\n")
            elif command in ("/new", "/reset"):
                await self.end_session("new")
                await self.new_session()
                self.write("Started a new session. I still remember what I saved about you.\n")
            elif command == "/memory":
                self.show_memory()
            elif command.startswith("/"):
                self.write(f"Unknown command {command}. Try /help.\n")
            else:
                await self.answer(text)
        await self.end_session("console_exit")
        self.write("Bye.\n")


async def run_console(
    settings: Settings, *, stdin: TextIO | None = None, out: TextIO | None = None
) -> None:
    require_llm_endpoint(settings)
    db = await AsyncSessionDB.open(ChorusPaths(settings.home).state_db)
    background = await asyncio.to_thread(start_background, settings)
    factory = AgentFactory(
        settings,
        db=db,
        scheduler=background.scheduler,
        load_provider=background.load_provider,
    )
    chat = ConsoleChat(factory, console_user(), out or sys.stdout)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, chat.interrupt)
    try:
        await chat.run(stdin or sys.stdin)
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await asyncio.to_thread(background.close, settings.gateway.shutdown_timeout)
        await factory.aclose()
        await db.aclose()

"""The terminal as a platform: ``chorus console`` goes through the same runner as every chat.

The local user is ``console:<os user>`` (an admin: it is their machine). A
streamed answer is "edited" by printing what was added; Ctrl-C sends ``/stop``;
``/quit`` or end of input leaves. The console is turn-based: after each line it
waits until the answer (or the command's reply) has been printed.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from gateway.adapters._base import AdapterCapabilities, BaseAdapter
from gateway.events import InboundMessage, OutboundMessage, SentMessage

logger = logging.getLogger(__name__)

PLATFORM = "console"
PROMPT = "you> "
SPEAKER = "chorus> "
QUIT = frozenset({"/quit", "/exit"})
IDLE_POLL_SECONDS = 0.02


class ConsoleAdapter(BaseAdapter):
    name = PLATFORM
    prompt_hint = "You are talking in a terminal. Plain text or light Markdown works best."
    capabilities = AdapterCapabilities(
        max_text_length=100_000,
        edits=True,
        typing=False,
        min_edit_interval=0.0,
        max_file_size=1 << 40,  # a file on this machine's disk
    )

    def __init__(
        self,
        user_id: str,
        *,
        stdin: TextIO | None = None,
        out: TextIO | None = None,
        files_dir: Path | None = None,
    ):
        """``files_dir``: where ``send_file`` writes (``CHORUS_HOME/exports``); None: it
        sends no files."""
        super().__init__()
        self.user_id = user_id
        self.files_dir = files_dir
        self._stdin = stdin or sys.stdin
        self._out = out or sys.stdout
        self._shown: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._running = False
        self._tasks: set[asyncio.Task[None]] = set()

    def write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    async def connect(self) -> None:
        self._running = True

    async def stop(self) -> None:
        self._running = False

    def is_connected(self) -> bool:
        return self._running

    async def send(self, message: OutboundMessage) -> SentMessage:
        sent = SentMessage(message.chat_id, f"c{next(self._ids)}")
        self._shown[sent.message_id] = message.text
        self.write(SPEAKER + message.text)
        return sent

    async def send_file(self, chat_id: str, filename: str, data: bytes, caption: str) -> None:
        """Written under ``files_dir`` (this user alone may read it); says where."""
        if self.files_dir is None:
            await super().send_file(chat_id, filename, data, caption)
            return
        target = self.files_dir / Path(filename).name
        await asyncio.to_thread(_write_private, target, data)
        self.write(f"{SPEAKER}{caption}\n  (saved as {target})\n")

    async def edit(self, sent: SentMessage, text: str) -> None:
        before = self._shown.get(sent.message_id, "")
        self._shown[sent.message_id] = text
        if text.startswith(before):
            self.write(text[len(before) :])
        else:  # the final text replaced what was streamed
            self.write("\n" + SPEAKER + text)

    async def message_done(self, sent: SentMessage) -> None:
        self.write("\n")
        self._shown.pop(sent.message_id, None)

    def interrupt(self) -> None:
        """Ctrl-C: stop the answer being written (never the program)."""
        task = asyncio.get_running_loop().create_task(self._send_line("/stop"))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_line(self, text: str) -> None:
        message = InboundMessage(
            platform=PLATFORM,
            chat_id=self.user_id,
            user_id=self.user_id,
            user_name=self.user_id,
            text=text,
            message_id=f"in{next(self._ids)}",
            is_direct=True,
        )
        await self.deliver(message)

    async def run(self, banner: str, idle: Callable[[], bool]) -> None:
        """Read lines until ``/quit`` or end of input, one turn at a time.

        ``idle`` tells when the runner has no turn running or waiting, i.e. when
        the answer to the last line has been printed.
        """
        self.write(banner)
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:
            while True:
                try:
                    line = self._stdin.readline()
                except (OSError, ValueError):
                    line = ""
                loop.call_soon_threadsafe(lines.put_nowait, line or None)
                if not line:
                    return

        threading.Thread(target=pump, name="console-stdin", daemon=True).start()
        while True:
            self.write(PROMPT)
            line = await lines.get()
            if line is None:
                self.write("\n")
                return
            text = line.strip()
            if not text:
                continue
            if text.split()[0].lower() in QUIT:
                return
            await self._send_line(text)
            # The session manager has no "quiet" event to wait on; one look every 20 ms
            # is nothing next to a person typing.
            while not idle():  # noqa: ASYNC110
                await asyncio.sleep(IDLE_POLL_SECONDS)


def _write_private(target: Path, data: bytes) -> None:
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)

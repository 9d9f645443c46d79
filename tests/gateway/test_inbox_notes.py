"""The notes of an answer on its way out are written at once, whatever else the process does.

Between a message reaching the chat and the note of its id, a kill would leave that
message behind (nothing can ask the platform for it); so the note is never queued
behind the process's other blocking work (the default threads of the event loop).
"""

from __future__ import annotations

import asyncio
import threading

from gateway.events import InboundMessage, SentMessage
from gateway.sessions import Inbox
from gateway.sessions._inbox_keeper import InboxKeeper
from memory.database import Location
from tests.fakes.clock import FakeClock

pytest_plugins = ["tests.fakes.tables_backends"]

BLOCKERS = 64
"""More than the default thread pool of any machine this runs on has threads."""


async def test_notes_are_written_while_every_default_thread_is_busy(where: Location) -> None:
    inbox = Inbox(where, FakeClock(1000.0))
    keeper = InboxKeeper(inbox, FakeClock(1000.0), settings=lambda: None)  # type: ignore[arg-type,return-value]
    release = threading.Event()
    loop = asyncio.get_running_loop()
    busy = [loop.run_in_executor(None, release.wait) for _ in range(BLOCKERS)]
    try:
        inbox.take("telegram", "1", "{}")
        note = keeper.noting_shown("telegram", ["1"])
        assert note is not None
        await asyncio.wait_for(note([SentMessage("42", "77")]), 30)
        assert inbox.pending("telegram")[0].shown == ("77",)
        msg = InboundMessage("telegram", "42", "42", "hi", "5", receipts=("1",))
        await asyncio.wait_for(keeper.answering([msg], "the answer"), 30)
        [row] = inbox.pending("telegram")
        assert (row.shown, row.answer) == (("77",), "the answer")
    finally:
        release.set()
        await asyncio.gather(*busy)
        keeper.close()
        inbox.close()

"""A replica that lost its session (another took it over with a larger epoch) can no
longer note or settle that session's deliveries in the shared inbox: PostgreSQL refuses
the write, as it refuses the stale replica's transcript writes (a real server)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.events import InboundMessage
from gateway.sessions import Inbox
from gateway.sessions._inbox_keeper import InboxKeeper
from memory.errors import SessionFenced
from memory.transcripts import SessionDB
from tests.fakes.clock import FakeClock

pytest_plugins = ["tests.fakes.postgres_fixtures"]

SESSION = "s-fenced"


@pytest.fixture
def database(postgres_server: object, postgres_url: str) -> Iterator[str]:
    with SessionDB(postgres_url):  # the transcripts' tables, session_epochs among them
        yield postgres_url


def pending(inbox: Inbox) -> dict[str, tuple[tuple[str, ...], str | None]]:
    return {d.receipt: (d.shown, d.answer) for d in inbox.pending("telegram")}


def test_the_old_owner_can_neither_note_nor_settle_once_the_session_was_taken_over(
    database: str,
) -> None:
    with Inbox(database) as inbox, SessionDB(database) as db:
        inbox.take("telegram", "7", "{}")
        old = (SESSION, 0)  # the session began on the old owner: no epoch taken
        inbox.shown("telegram", ["7"], ["m1"], fence=old)  # still its own
        new = (SESSION, db.take_epoch(SESSION))  # another replica took it over

        with pytest.raises(SessionFenced):
            inbox.shown("telegram", ["7"], ["m1", "m2"], fence=old)
        with pytest.raises(SessionFenced):
            inbox.answering("telegram", ["7"], "stale answer", fence=old)
        with pytest.raises(SessionFenced):
            inbox.done("telegram", ["7"], fence=old)
        assert pending(inbox) == {"7": (("m1",), None)}  # nothing of it was written

        inbox.answering("telegram", ["7"], "the answer", fence=new)
        assert pending(inbox) == {"7": (("m1",), "the answer")}
        inbox.done("telegram", ["7"], fence=new)
        assert pending(inbox) == {}


async def test_a_fenced_settle_is_left_to_the_new_owner_and_not_retried(
    database: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO)
    told: list[list[InboundMessage]] = []

    async def on_settled(batch: list[InboundMessage]) -> None:
        told.append(batch)

    settings = Settings(home=tmp_path)
    with Inbox(database) as inbox, SessionDB(database) as db:
        inbox.take("telegram", "8", "{}")
        keeper = InboxKeeper(inbox, FakeClock(), lambda: settings, on_settled=on_settled)
        msg = InboundMessage(
            platform="telegram",
            chat_id="42",
            user_id="42",
            text="hello",
            message_id="100",
            receipts=("8",),
        )
        db.take_epoch(SESSION)

        await keeper.settle([msg], (SESSION, 0))

        assert [d.receipt for d in inbox.pending("telegram")] == ["8"]
        assert told == []  # its mailbox entry stays for the new owner
        assert "left to the replica that took their session over" in caplog.text
        assert "retry" not in caplog.text

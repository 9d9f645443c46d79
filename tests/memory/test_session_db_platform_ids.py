"""Messages found again by the platform's id: removed or edited when their author deletes
or edits them on the platform, with the search index following (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.transcripts import SessionDB

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ALICE = "slack:T1:U1"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionDB]:
    where = (
        tmp_path / "sessions.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    database = SessionDB(where)
    yield database
    database.close()


def conversation(db: SessionDB) -> None:
    db.create_session("s1", platform="slack", user_key=ALICE, started_at=1_000.0)
    db.append_message("s1", "user", "my zeppelin code is 4711", platform_message_id="171.01")
    db.append_message("s1", "assistant", "noted")
    db.append_message("s1", "user", "and the weather?", platform_message_id="171.02")


def test_a_deleted_message_leaves_the_transcript_and_the_index(db: SessionDB) -> None:
    conversation(db)
    assert db.search(ALICE, "zeppelin")
    removed = db.remove_platform_message("s1", "171.01")
    assert removed is not None and removed.content == "my zeppelin code is 4711"
    contents = [m.content for m in db.get_messages("s1")]
    assert contents == [None, "noted", "and the weather?"]  # later turns keep their place
    assert db.search(ALICE, "zeppelin") == []
    assert db.remove_platform_message("s1", "171.01") is None
    assert db.remove_platform_message("other", "171.02") is None


def test_a_message_is_found_by_chat_and_platform_id(db: SessionDB) -> None:
    conversation(db)
    db.create_session("s2", platform="slack", user_key=ALICE, chat_id="C2", started_at=2.0)
    db.append_message("s2", "user", "elsewhere", platform_message_id="171.02")
    found = db.platform_message("slack", "C2", "171.02")
    assert found is not None and found[0].session_id == "s2" and found[1] == 1
    assert db.platform_message("slack", "C9", "171.02") is None
    assert db.platform_message("discord", "C2", "171.02") is None


def test_an_edited_message_is_stored_and_found_with_its_new_words(db: SessionDB) -> None:
    conversation(db)
    before = db.edit_platform_message("s1", "171.02", "and the forecast for Lisbon?")
    assert before is not None and before.content == "and the weather?"
    [_, _, edited] = db.get_messages("s1")
    assert edited.content == "and the forecast for Lisbon?"
    assert edited.platform_message_id == "171.02"
    assert db.search(ALICE, "lisbon")
    assert db.search(ALICE, "weather") == []
    assert db.edit_platform_message("s1", "999.9", "nothing") is None

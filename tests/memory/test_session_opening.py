"""Opening a session in one trip: its row made, its prompt stored unless it has one."""

from __future__ import annotations

from pathlib import Path

from memory.transcripts import SessionDB
from memory.transcripts._opening import open_session

FIELDS = {"platform": "telegram", "user_key": "telegram:100", "chat_id": "100"}


def test_a_new_session_is_opened_with_its_prompt(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "sessions.db")
    try:
        opened = open_session(db, "s1", system_prompt="You are chorus.", **FIELDS)
        assert opened.messages == []
        assert opened.record is not None and opened.record.system_prompt == "You are chorus."
        stored = db.get_session("s1")
        assert stored is not None and stored.system_prompt == "You are chorus."
    finally:
        db.close()


def test_a_resumed_session_keeps_the_prompt_it_had(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "sessions.db")
    try:
        open_session(db, "s1", system_prompt="the frozen prompt", **FIELDS)
        db.append_message("s1", "user", "hello")
        opened = open_session(db, "s1", system_prompt="a newer prompt", **FIELDS)
        assert [m.content for m in opened.messages] == ["hello"]
        assert opened.record is not None and opened.record.system_prompt == "the frozen prompt"
        stored = db.get_session("s1")
        assert stored is not None and stored.system_prompt == "the frozen prompt"
    finally:
        db.close()


def test_without_a_prompt_the_session_has_none(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "sessions.db")
    try:
        opened = open_session(db, "s1", **FIELDS)
        assert opened.record is not None and not opened.record.system_prompt
    finally:
        db.close()


def test_a_session_that_follows_finds_the_latest_ended_one_of_its_conversation(
    tmp_path: Path,
) -> None:
    db = SessionDB(tmp_path / "sessions.db")
    try:
        for n, reason in ((1, "idle"), (2, "new")):
            db.create_session(f"s{n}", started_at=float(n), **FIELDS)
            db.end_session(f"s{n}", reason)
        db.create_session("open", started_at=3.0, **FIELDS)  # not ended: not a parent
        db.create_session("elsewhere", started_at=4.0, **{**FIELDS, "chat_id": "200"})
        db.end_session("elsewhere", "idle")

        opened = open_session(db, "s3", follow=True, started_at=5.0, **FIELDS)
        assert opened.follows == ("s2", "new")
        stored = db.get_session("s3")
        assert stored is not None and stored.parent_session_id == "s2"

        again = open_session(db, "s3", follow=True, **FIELDS)  # it exists: nothing looked up
        assert again.follows is None
        assert open_session(db, "s4", **FIELDS).follows is None  # not asked to follow
        assert (db.get_session("s4") or stored).parent_session_id is None
        given = open_session(db, "s5", follow=True, parent_session_id="s1", **FIELDS)
        assert given.follows is None
        assert (db.get_session("s5") or stored).parent_session_id == "s1"
    finally:
        db.close()


def test_the_first_session_of_a_conversation_follows_none(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "sessions.db")
    try:
        opened = open_session(db, "s1", follow=True, **FIELDS)
        assert opened.follows is None
        assert opened.record is not None and opened.record.parent_session_id is None
    finally:
        db.close()

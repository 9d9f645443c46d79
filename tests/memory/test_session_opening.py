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

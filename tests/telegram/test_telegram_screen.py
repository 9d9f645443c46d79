"""A ``getUpdates`` answer is screened without parsing: ``screen_updates`` keeps each
update that has an integer id, marks those with more than their id to be recorded
and read, and drops the rest; ``parsed`` reads one update (real python-telegram-bot
parsing) when it is handed on."""

from __future__ import annotations

import json

from telegram import Update

from gateway.adapters.telegram._guard import parsed, screen_updates


def _text(update_id: int, chat: object = 1001, text: str = "hello") -> dict[str, object]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id * 10,
            "date": 1_700_000_000,
            "chat": {"id": chat, "type": "private", "first_name": "Ann"},
            "from": {"id": 1001, "is_bot": False, "first_name": "Ann"},
            "text": text,
        },
    }


def test_updates_with_an_id_are_kept_and_the_rest_dropped_unparsed() -> None:
    payload = json.dumps(
        {
            "ok": True,
            "result": [
                _text(1),
                {"update_id": 2},  # already bare
                _text(3, chat="not a number"),  # kept: it is found unreadable when read
                "not an update",  # no id at all: dropped
                {"update_id": "5", "message": {}},  # no integer id: dropped
                _text(4, text="again"),
            ],
        }
    ).encode()
    screened = screen_updates(payload)
    assert screened is not None
    assert [u["update_id"] for u in screened.result] == [1, 2, 3, 4]
    assert screened.handled == [0, 2, 3]  # the bare id has nothing to record or read
    assert screened.skipped == 2
    assert screened.result[2] == _text(3, chat="not a number")  # as it came, unparsed


def test_an_update_is_read_when_handed_on_and_unreadable_ones_are_none() -> None:
    update = parsed(_text(1, text="hi"), None)
    assert isinstance(update, Update) and update.message is not None
    assert update.message.text == "hi"
    assert parsed(_text(3, chat="not a number"), None) is None  # breaks the bookkeeping
    assert parsed({"update_id": 7, "message": {"text": 5}}, None) is None  # does not parse
    assert parsed("not an update", None) is None


def test_an_answer_that_is_not_a_list_of_updates_is_left_to_the_library() -> None:
    assert screen_updates(b"<html>Bad Gateway</html>") is None
    assert screen_updates(json.dumps({"ok": False, "error_code": 409}).encode()) is None

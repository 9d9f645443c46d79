"""A ``getUpdates`` answer is parsed once: ``screen_updates`` keeps each readable
update parsed for the handler and reduces the others to their id (real
python-telegram-bot parsing)."""

from __future__ import annotations

import json

from telegram import Update

from gateway.adapters.telegram._guard import screen_updates


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


def test_readable_updates_come_back_parsed_and_the_rest_as_bare_ids() -> None:
    payload = json.dumps(
        {
            "ok": True,
            "result": [
                _text(1),
                {"update_id": 2},  # already bare
                _text(3, chat="not a number"),  # parses, but breaks the bookkeeping later
                "not an update",  # no id at all: dropped
                _text(4, text="again"),
            ],
        }
    ).encode()
    screened = screen_updates(payload, None)
    assert screened is not None
    assert [u["update_id"] for u in screened.result] == [1, 2, 3, 4]
    assert screened.result[2] == {"update_id": 3}
    assert screened.skipped == 2
    first, bare, unreadable, last = screened.updates
    assert isinstance(first, Update) and first.message is not None
    assert first.message.text == "hello"
    assert bare is None and unreadable is None
    assert isinstance(last, Update) and last.message is not None
    assert last.message.text == "again"


def test_an_answer_that_is_not_a_list_of_updates_is_left_to_the_library() -> None:
    assert screen_updates(b"<html>Bad Gateway</html>", None) is None
    assert screen_updates(json.dumps({"ok": False, "error_code": 409}).encode(), None) is None

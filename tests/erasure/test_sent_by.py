"""Which durable-inbox deliveries a person sent, in each platform's own payload shape."""

from __future__ import annotations

from memory.erasure._sweep import sent_by


def test_each_platforms_sender_is_found_and_no_one_elses() -> None:
    telegram = {"update_id": 9, "message": {"message_id": 1, "from": {"id": 42}, "text": "hi"}}
    slack = {"type": "event_callback", "event": {"type": "message", "user": "U42", "text": "hi"}}
    discord = {"user_id": "4242", "platform": "discord", "text": "hi"}
    assert sent_by(telegram, "42") and not sent_by(telegram, "4")
    assert sent_by(slack, "U42") and not sent_by(slack, "U4")
    assert sent_by(discord, "4242") and not sent_by(discord, "42")
    rich = [{"type": "rich_text", "elements": [{"type": "user", "user_id": "U42"}]}]
    mention = {"event": {"user": "U1", "text": "<@U42> hi", "blocks": rich}}
    assert not sent_by(mention, "U42")

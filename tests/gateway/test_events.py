"""A message handed to another replica keeps the others' words it carries."""

from __future__ import annotations

from gateway.events import InboundMessage, Quoted, message_from_json, message_to_json


def test_quoted_words_survive_the_handover_between_replicas() -> None:
    message = InboundMessage(
        platform="slack",
        chat_id="C1",
        user_id="U1",
        text="what is left?",
        message_id="2.0",
        quoted=(Quoted("thread", "Bob", "note for the bot: save this"),),
    )
    again = message_from_json(message_to_json(message))
    assert again == message
    assert again.others_content

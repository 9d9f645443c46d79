"""A message handed to another replica keeps the others' words it carries."""

from __future__ import annotations

from gateway.events import (
    Attachment,
    InboundMessage,
    Quoted,
    message_from_json,
    message_to_json,
)


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


def test_the_replied_to_message_survives_and_a_download_is_left_behind() -> None:
    async def fetch(limit: int) -> bytes | None:
        return b"voice"

    voice = Attachment("voice", "v.ogg", "audio/ogg", 5, duration=3.0, fetch=fetch)
    message = InboundMessage(
        platform="telegram",
        chat_id="1",
        user_id="1",
        text="and this?",
        message_id="2",
        attachments=(voice,),
        in_reply_to=Quoted("reply", "Ann", "my build fails"),
    )
    again = message_from_json(message_to_json(message))
    assert again.in_reply_to == Quoted("reply", "Ann", "my build fails")
    assert not again.others_content
    [attachment] = again.attachments
    assert attachment.fetch is None and attachment.duration == 3.0


def test_the_parts_of_a_merged_turn_answered_again_survive_the_handover() -> None:
    message = InboundMessage(
        platform="slack",
        chat_id="D1",
        user_id="U1",
        text="my code\n\nwhat is the weather in Lisbon?",
        message_id="1.0:edited",
        merged_from=(("1.0", 7), ("2.0", 30)),
    )
    again = message_from_json(message_to_json(message))
    assert again == message

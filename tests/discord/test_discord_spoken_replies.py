"""Spoken replies on Discord: the answer read out, attached as an OGG/Opus audio file."""

from __future__ import annotations

from tests.discord.conftest import ANN, BOB, GatewayFactory
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID
from tests.waiting import spoken_replies

SPEECH = {"CHORUS_LLM__SPEECH_MODEL": "gpt-4o-mini-tts"}


async def test_voice_on_attaches_the_answer_read_out_where_it_was_asked(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**SPEECH)
    fake, llm = gw.discord, gw.server
    fake.message(
        f"<@{BOT_ID}> /voice on",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    [said] = await fake.wait_posted(CHANNEL_ID, 1)
    assert "voice message" in said.content

    llm.reply("The `deploy` runs at ten.")
    fake.message(
        f"<@{BOT_ID}> when is the deploy?",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    posts = await fake.wait_posted(CHANNEL_ID, 2)
    assert posts[1].content == "The `deploy` runs at ten."  # the text answer, as ever
    await fake.wait_for(lambda: bool(fake.attachments), 15, "an attachment")
    [attached] = fake.attachments
    assert (attached.channel_id, attached.filename) == (CHANNEL_ID, "answer.ogg")
    assert attached.data.startswith(b"OggS")
    [message] = [p for p in fake.posted_in(CHANNEL_ID) if p.id == attached.message_id]
    assert message.data["attachments"][0]["content_type"] == "audio/ogg"
    [asked] = llm.speech_requests
    assert (asked.input, asked.response_format) == ("The deploy runs at ten.", "opus")

    llm.reply("Bob's answer.")  # Bob never asked for voice
    fake.message(
        f"<@{BOT_ID}> and me?",
        author=BOB,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    await fake.wait_posted(CHANNEL_ID, 4)
    await spoken_replies(gw.stack, 2)
    assert len(fake.attachments) == 1 and len(llm.speech_requests) == 1

"""Voice messages, documents and the replied-to message on Discord, through the real gateway."""

from __future__ import annotations

from agent.others import QUOTED_END, QUOTED_MARK
from gateway.media import VOICE_MARK
from gateway.media import _texts as media_texts
from tests.discord.conftest import ANN, BOB, DM_ANN, GatewayFactory
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID
from tests.media_files import pdf_with_text

VOICE = b"OggS fake discord voice message"
OTHER_CHANNEL = 920_000_000_000_000_077
TRANSCRIBE = {"CHORUS_LLM__TRANSCRIPTION_MODEL": "gpt-4o-mini-transcribe"}


def user_text(request: dict[str, object], index: int = -1) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str([m["content"] for m in messages if m["role"] == "user"][index])


async def test_a_voice_message_is_transcribed_and_answered(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(**TRANSCRIBE)
    fake, llm = gw.discord, gw.server
    file = fake.add_file(
        VOICE, name="voice-message.ogg", content_type="audio/ogg", voice_seconds=3.5
    )
    llm.transcripts[VOICE] = "remind me what XJ-9000 is"
    llm.reply("A disk error.")
    fake.message("", author=ANN, channel_id=DM_ANN, attachments=[file])
    [answer] = await fake.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert answer.content == "A disk error."
    [heard] = llm.transcription_requests
    assert (heard.model, heard.filename, heard.data) == (
        "gpt-4o-mini-transcribe",
        "voice-message.ogg",
        VOICE,
    )
    assert user_text(llm.requests[0]) == f"{VOICE_MARK}\nremind me what XJ-9000 is"


async def test_a_voice_message_past_the_length_limit_is_declined(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_MEDIA__MAX_VOICE_SECONDS="30", **TRANSCRIBE)
    fake = gw.discord
    file = fake.add_file(
        VOICE, name="voice-message.ogg", content_type="audio/ogg", voice_seconds=45
    )
    fake.message("", author=ANN, channel_id=DM_ANN, attachments=[file])
    [reply] = await fake.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert reply.content == media_texts.VOICE_TOO_LONG.format(limit="30 seconds")
    assert fake.downloads == [] and not gw.server.requests


async def test_a_pdf_and_a_csv_reach_the_turn_and_a_zip_is_declined(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    pdf = fake.add_file(
        pdf_with_text("Minutes: ship on Friday"), name="minutes.pdf", content_type="application/pdf"
    )
    csv = fake.add_file(b"day,tasks\nfri,ship\n", name="plan.csv", content_type="text/csv")
    archive = fake.add_file(b"PK\x03\x04", name="logs.zip", content_type="application/zip")
    llm.reply("You ship on Friday.")
    fake.message("when do we ship?", author=ANN, channel_id=DM_ANN, attachments=[pdf, csv, archive])
    notice, answer = await fake.wait_posted(DM_ANN, 2)
    await gw.settle()
    assert notice.content == 'I can\'t read this kind of file yet ("logs.zip").'
    assert answer.content == "You ship on Friday."
    assert user_text(llm.requests[0]) == (
        f"A file shared with the message {QUOTED_MARK}:\n"
        "> minutes.pdf: Minutes: ship on Friday\n"
        "> plan.csv: day,tasks\n> fri,ship\n"
        f"{QUOTED_END}\n\nwhen do we ship?"
    )
    assert sorted(fake.downloads) == sorted([int(pdf["id"]), int(csv["id"])])


async def test_a_reply_to_someones_message_carries_it(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    bobs = fake.message(
        "error XJ-9000 on deploy", author=BOB, channel_id=CHANNEL_ID, guild_id=GUILD_ID
    )
    llm.reply("The disk is full.")
    fake.message(
        f"<@{BOT_ID}> what does this mean?",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
        referenced=bobs,
    )
    await fake.wait_posted(CHANNEL_ID, 1)
    await gw.settle()
    assert user_text(llm.requests[0]) == (
        f"The message this one replies to {QUOTED_MARK}:\n"
        f"> Bob: error XJ-9000 on deploy\n{QUOTED_END}\n\nwhat does this mean?"
    )


async def test_a_message_of_another_channel_is_never_carried(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    elsewhere = fake.said_earlier(
        "the admin password is hunter2", author=BOB, channel_id=OTHER_CHANNEL, guild_id=GUILD_ID
    )
    llm.reply("I see no earlier message.")
    fake.message(
        f"<@{BOT_ID}> what did he say?",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
        referenced=elsewhere,
    )
    await fake.wait_posted(CHANNEL_ID, 1)
    await gw.settle()
    assert user_text(llm.requests[0]) == "what did he say?"

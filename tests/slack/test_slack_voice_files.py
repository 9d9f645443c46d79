"""Voice clips, documents and a thread's first message on Slack, through the real gateway."""

from __future__ import annotations

from agent.others import QUOTED_END, QUOTED_MARK
from gateway.media import VOICE_MARK
from tests.fakes.slack_requests import BOT_USER_ID
from tests.media_files import BROKEN_PDF, pdf_with_text
from tests.slack.conftest import ADMIN, ANN, BOB, CHANNEL, DM_ANN, GatewayFactory, user_texts

CLIP = b"\x1aE\xdf\xa3 fake webm audio clip"


async def test_a_voice_clip_is_transcribed_with_the_bot_token(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_LLM__TRANSCRIPTION_MODEL="whisper-1")
    slack, llm = gw.slack, gw.server
    clip = {
        **slack.add_file(CLIP, mimetype="audio/webm", name="audio_message.webm"),
        "subtype": "slack_audio",
        "duration_ms": 2400,
    }
    llm.transcripts[CLIP] = "is the build green"
    llm.reply("Yes, it is.")
    event = slack.person("", user=ANN, channel=DM_ANN, subtype="file_share", files=[clip])
    await gw.event(event)
    [answer] = await slack.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert answer.text == "Yes, it is."
    assert slack.downloads == [(clip["id"], f"Bearer {slack.token}")]
    [heard] = llm.transcription_requests
    assert (heard.filename, heard.data) == ("audio_message.webm", CLIP)
    assert user_texts(llm.requests[0])[-1] == f"{VOICE_MARK}\nis the build green"


async def test_documents_are_read_and_the_rest_declined(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    pdf = slack.add_file(pdf_with_text("Budget: 300"), mimetype="application/pdf", name="b.pdf")
    data = slack.add_file(b'{"owner": "bob"}', mimetype="application/json", name="owner.json")
    broken = slack.add_file(BROKEN_PDF, mimetype="application/pdf", name="old.pdf")
    sheet = slack.add_file(b"PK\x03\x04", mimetype="application/vnd.ms-excel", name="x.xls")
    llm.reply("300, owned by bob.")
    files = [pdf, data, broken, sheet]
    event = slack.person("sum up", user=ANN, channel=DM_ANN, subtype="file_share", files=files)
    await gw.event(event)
    notice, answer = await slack.wait_posted(DM_ANN, 2)
    await gw.settle()
    assert notice.text == (
        'I couldn\'t read "old.pdf": the file seems damaged or is protected.\n'
        'I can\'t read this kind of file yet ("x.xls").'
    )
    assert answer.text == "300, owned by bob."
    assert user_texts(llm.requests[0])[-1] == (
        f"A file shared with the message {QUOTED_MARK}:\n"
        "> b.pdf: Budget: 300\n"
        '> owner.json: {"owner": "bob"}\n'
        f"{QUOTED_END}\n\nsum up"
    )


async def test_a_later_asker_in_a_thread_gets_its_first_message(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    kind = {"channel": CHANNEL, "channel_type": "channel"}
    slack.add_user(BOB, "Bob")
    root = slack.person("error XJ-9000 on deploy", user=BOB, **kind)
    llm.reply("Looking.")
    llm.reply("It means the disk is full.")
    first = slack.person(f"<@{BOT_USER_ID}> seen this?", user=ADMIN, thread_ts=root["ts"], **kind)
    await gw.event(first)
    await slack.wait_posted(CHANNEL, 1)
    ask = slack.person(
        f"<@{BOT_USER_ID}> what does this mean?", user=ANN, thread_ts=root["ts"], **kind
    )
    await gw.event(ask)
    await slack.wait_posted(CHANNEL, 2)
    await gw.settle()
    assert user_texts(llm.requests[1])[-1] == (
        f"The message this one replies to {QUOTED_MARK}:\n"
        f"> Bob: error XJ-9000 on deploy\n{QUOTED_END}\n\nwhat does this mean?"
    )

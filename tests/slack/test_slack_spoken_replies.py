"""Spoken replies on Slack: an audio file uploaded (``files_upload_v2``) beside the answer."""

from __future__ import annotations

from memory.usage_ledger import UsageLedger
from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ANN, BOB, CHANNEL, DM_ANN, GatewayFactory
from tests.waiting import spoken_replies

SPEECH = {"CHORUS_LLM__SPEECH_MODEL": "tts-1"}


async def test_voice_on_uploads_the_answer_read_out_into_the_direct_chat(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**SPEECH)
    slack, llm = gw.slack, gw.server
    await gw.event(slack.person("/voice on", user=ANN, channel=DM_ANN))
    [said] = await slack.wait_posted(DM_ANN, 1)
    assert "voice message" in said.text

    llm.reply("Tea at *four*.")
    await gw.event(slack.person("when is tea?", user=ANN, channel=DM_ANN))
    answers = await slack.wait_posted(DM_ANN, 2)
    assert answers[-1].text == "Tea at _four_."  # the text answer, as ever (mrkdwn)
    await slack.wait_for(lambda: bool(slack.shared), 15, "a shared audio file")
    [shared] = slack.shared
    assert (shared.channel, shared.filename, shared.thread_ts) == (DM_ANN, "answer.ogg", None)
    assert shared.data.startswith(b"OggS")
    assert [(r.input, r.model, r.response_format) for r in llm.speech_requests] == [
        ("Tea at four.", "tts-1", "opus")
    ]
    await spoken_replies(gw.stack, 1)
    with UsageLedger(gw.stack.settings.home / "state.db") as ledger:
        [row] = [r for r in ledger.rows(f"slack:{ANN}") if r.purpose == "speech"]
    assert row.model == "tts-1" and row.estimated


async def test_in_a_channel_the_voice_goes_into_the_answers_thread_and_only_for_who_asked(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**SPEECH)
    slack, llm = gw.slack, gw.server
    await gw.event(slack.person("/voice on", user=ANN, channel=DM_ANN))
    await slack.wait_posted(DM_ANN, 1)

    llm.reply("At your service.")
    message = slack.person(
        f"<@{BOT_USER_ID}> help?", user=ANN, channel=CHANNEL, channel_type="channel"
    )
    await gw.event(message)
    [reply] = await slack.wait_posted(CHANNEL, 1)
    await slack.wait_for(lambda: bool(slack.shared), 15, "a shared audio file")
    [shared] = slack.shared
    assert shared.channel == CHANNEL
    assert shared.thread_ts == reply.thread_ts == message["ts"]

    llm.reply("For Bob.")  # Bob asked for no voice
    bobs = slack.person(
        f"<@{BOT_USER_ID}> and me?", user=BOB, channel=CHANNEL, channel_type="channel"
    )
    await gw.event(bobs)
    await slack.wait_posted(CHANNEL, 2)
    await spoken_replies(gw.stack, 2)
    assert len(slack.shared) == 1 and len(llm.speech_requests) == 1

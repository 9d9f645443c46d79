"""Images for a vision model, and what a thread already said when the bot is first asked."""

from __future__ import annotations

import base64

from agent.others import QUOTED_MARK
from gateway._texts import ATTACHMENTS_SKIPPED
from tests.discord.conftest import ANN, BOB, DM_ANN, GatewayFactory
from tests.fakes import FakeOpenAI
from tests.fakes.discord_data import BOT_ID, GUILD_ID, THREAD_ID, attachment


async def test_a_shared_image_reaches_a_vision_model(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    fake = gw.discord
    picture = b"\x89PNG\r\n fake png bytes"
    file = fake.add_file(picture, name="cat.png", content_type="image/png")
    gw.server.reply("A cat.")
    fake.message("what is this?", author=ANN, channel_id=DM_ANN, attachments=[file])
    [answer] = await fake.wait_posted(DM_ANN, 1)
    assert answer.content == "A cat."
    content = gw.server.requests[0]["messages"][-1]["content"]
    assert content[0]["type"] == "text" and "what is this?" in content[0]["text"]
    expected = "data:image/png;base64," + base64.b64encode(picture).decode()
    assert content[1] == {"type": "image_url", "image_url": {"url": expected}}
    assert fake.downloads == [int(file["id"])]


async def test_images_are_not_fetched_beyond_the_cap_elsewhere_or_without_vision(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    fake = gw.discord
    huge = {**fake.add_file(b"x" * 10, name="huge.png"), "size": 50_000_000}
    foreign = attachment(1, "x.png", "http://203.0.113.9/x.png", content_type="image/png", size=9)
    clip = fake.add_file(b"\x00\x00\x00 ftyp", name="clip.mp4", content_type="video/mp4")
    gw.server.reply("Nothing to see.")
    fake.message("look", author=ANN, channel_id=DM_ANN, attachments=[huge, foreign, clip])
    posted = await fake.wait_posted(DM_ANN, 2)
    # nothing of it could be read: the person is told, and the text is answered
    assert [p.content for p in posted] == [ATTACHMENTS_SKIPPED, "Nothing to see."]
    assert fake.downloads == []
    content = gw.server.requests[0]["messages"][-1]["content"]
    assert isinstance(content, str) or all(part["type"] == "text" for part in content)


async def test_without_vision_no_image_is_downloaded(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake = gw.discord
    file = fake.add_file(b"\x89PNG fake", name="cat.png")
    gw.server.reply("I cannot see images.")
    fake.message("what is this?", author=ANN, channel_id=DM_ANN, attachments=[file])
    await fake.wait_posted(DM_ANN, 1)
    assert fake.downloads == []


def last_user_text(server: FakeOpenAI, index: int) -> str:
    content = server.requests[index]["messages"][-1]["content"]
    return content if isinstance(content, str) else str(content[0]["text"])


async def test_the_first_mention_in_a_thread_carries_what_the_thread_said(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake = gw.discord
    fake.said_earlier("we moved the meeting to Friday", author=BOB, channel_id=THREAD_ID)
    fake.said_earlier("which room?", author=ANN, channel_id=THREAD_ID)
    gw.server.reply("Friday, room unknown.")
    fake.message(
        f"<@{BOT_ID}> can you sum this up?",
        author=ANN,
        channel_id=THREAD_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    await fake.wait_posted(THREAD_ID, 1)
    await gw.settle()
    first = last_user_text(gw.server, 0)
    assert f"Earlier in this thread {QUOTED_MARK}:" in first
    assert "> Bob: we moved the meeting to Friday" in first
    assert "> Ann: which room?" in first
    assert first.index("which room?") < first.index("can you sum this up?")
    reads = fake.calls_of("GET", f"/channels/{THREAD_ID}/messages")
    assert len(reads) == 1

    gw.server.reply("Still Friday.")
    fake.message(
        f"<@{BOT_ID}> and the time?",
        author=ANN,
        channel_id=THREAD_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    await fake.wait_posted(THREAD_ID, 2)
    assert QUOTED_MARK not in last_user_text(gw.server, 1)
    assert len(fake.calls_of("GET", f"/channels/{THREAD_ID}/messages")) == 1

"""Direct messages, end to end through the runner, against the fake Bot API."""

from __future__ import annotations

import itertools
import logging

import pytest

from tests.fakes.telegram_data import utf16_len
from tests.telegram.conftest import ANN, GatewayFactory, user_texts


async def test_dm_conversation_end_to_end(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    llm.reply("Hello Ann! **How** can I help?")
    tg.message("hi there", user_id=ANN)
    [first] = await tg.wait_messages(ANN, 1)
    assert first.text == "Hello Ann! How can I help?"
    assert first.entities == [{"type": "bold", "offset": 11, "length": 3}]
    assert first.reply_to is None and first.thread_id is None
    assert tg.calls_of("sendChatAction")
    assert tg.calls_of("sendChatAction")[0].params["action"] == "typing"

    llm.reply("You said you were there.")
    tg.message("where was I?", user_id=ANN)
    messages = await tg.wait_messages(ANN, 2)
    assert messages[1].text == "You said you were there."
    assert user_texts(llm.requests[-1])[-2:] == ["hi there", "where was I?"]
    assert gw.adapter.is_connected()
    assert not tg.pending()  # every update confirmed


async def test_streaming_edits_one_message_at_most_once_a_second(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    words = [f"word{n}" for n in range(50)]
    answer = " ".join(words)
    llm.stream_piece_delay = 0.06
    llm.reply(answer)
    tg.message("tell me a story", user_id=ANN)
    await tg.wait_for(lambda: any(m.text == answer for m in tg.in_chat(ANN)), what="final text")
    [message] = tg.in_chat(ANN)
    assert len(message.history) >= 2, "the answer was not streamed"
    assert message.history[-1] == answer
    calls = [call for call in tg.calls if call.method in ("sendMessage", "editMessageText")]
    texts = [call.params.get("text") for call in calls]
    streaming = calls[: texts.index(answer)]  # up to the final text, which the chat's own
    # budget paces (a burst of three, then one a second), not the interval of the stream
    assert len(streaming) >= 2, texts
    gaps = [b.at - a.at for a, b in itertools.pairwise(streaming)]
    assert all(gap >= 0.95 for gap in gaps), gaps


async def test_edited_messages_are_not_answered_again(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    update = tg.message("first version", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    edited = {**update["message"], "text": "second version", "edit_date": 1}
    tg.add_update({"edited_message": edited})
    tg.message("next", user_id=ANN)
    await tg.wait_messages(ANN, 2)
    await gw.settle()
    assert len(gw.server.requests) == 2
    assert "second version" not in str(gw.server.requests)


async def test_a_split_paste_arrives_as_one_message(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    first = ("lorem ipsum " * 400)[:4090]
    second = "and the end of the paste"
    llm.reply("Got all of it.")
    tg.message(first, user_id=ANN)
    tg.message(second, user_id=ANN)
    await tg.wait_messages(ANN, 1)
    await gw.settle()
    assert len(llm.requests) == 1
    [text] = user_texts(llm.requests[0])
    assert text.startswith(first.strip()) and text.endswith(second)


@pytest.mark.parametrize(
    ("media", "vision"),
    [
        ({"voice": {"file_id": "v1", "file_unique_id": "v1", "duration": 3}}, False),
        (
            {
                "document": {
                    "file_id": "d1",
                    "file_unique_id": "d1",
                    "file_name": "report.pdf",
                    "file_size": 50_000_000,
                }
            },
            False,
        ),
        (
            {
                "photo": [
                    {
                        "file_id": "p1",
                        "file_unique_id": "p1",
                        "width": 90,
                        "height": 90,
                        "file_size": 1200,
                    },
                ]
            },
            False,
        ),
    ],
    ids=["voice", "document", "photo"],
)
async def test_media_get_a_clear_reply_and_are_never_fetched_unbounded(
    make_gateway: GatewayFactory, media: dict[str, object], vision: bool
) -> None:
    gw = await make_gateway(vision=vision)
    tg = gw.telegram
    tg.files["p1"] = b"\xff\xd8 fake jpeg"
    tg.message(None, user_id=ANN, **media)
    [reply] = await tg.wait_messages(ANN, 1)
    assert any(words in reply.text for words in ("can't read", "can't listen", "too large"))
    assert not gw.server.requests
    fetched = [c.params["file_id"] for c in tg.calls_of("getFile")]
    assert fetched == (["p1"] if vision else [])


async def test_photo_reaches_a_vision_model(make_gateway: GatewayFactory) -> None:
    import base64

    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    tg = gw.telegram
    tg.files["p1"] = b"\xff\xd8 fake jpeg"
    gw.server.reply("A small square picture.")
    photo = [{"file_id": "p1", "file_unique_id": "p1", "width": 90, "height": 90, "file_size": 12}]
    tg.message(None, user_id=ANN, photo=photo, caption="what is this?")
    [answer] = await tg.wait_messages(ANN, 1)
    assert answer.text == "A small square picture."
    content = gw.server.requests[0]["messages"][-1]["content"]
    assert content[0]["type"] == "text" and "what is this?" in content[0]["text"]
    expected = "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8 fake jpeg").decode()
    assert content[1] == {"type": "image_url", "image_url": {"url": expected}}


async def test_caption_is_answered_and_the_attachment_acknowledged(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    gw.server.reply("Here is my answer to the caption.")
    audio = {"file_id": "a1", "file_unique_id": "a1", "duration": 30}
    tg.message(None, user_id=ANN, audio=audio, caption="what do you think?")
    notice, answer = await tg.wait_messages(ANN, 2)
    assert notice.text == "I can't listen to voice messages here."
    assert answer.text == "Here is my answer to the caption."
    assert user_texts(gw.server.requests[0]) == ["what do you think?"]


async def test_the_token_never_reaches_the_logs(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("hello", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    await gw.close()
    assert caplog.records
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert tg.token not in logged
    assert tg.token.split(":")[1] not in logged


async def test_parts_fit_telegrams_utf16_limit(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_TELEGRAM__STREAMING="false")
    tg = gw.telegram
    answer = "😀" * 3000  # 6,000 UTF-16 units in 3,000 characters
    gw.server.reply(answer)
    tg.message("emoji please", user_id=ANN)
    await tg.wait_for(
        lambda: "".join(m.text for m in tg.in_chat(ANN)) == answer, what="whole answer"
    )
    parts = tg.in_chat(ANN)
    assert len(parts) == 2
    assert all(utf16_len(p.text) <= 4096 for p in parts)

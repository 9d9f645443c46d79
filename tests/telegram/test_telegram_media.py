"""Voice notes, documents and the replied-to message on Telegram, through the real gateway."""

from __future__ import annotations

from agent.others import QUOTED_END, QUOTED_MARK
from gateway.media import VOICE_MARK
from gateway.media import _texts as media_texts
from memory.paths import ChorusPaths
from memory.transcripts import SessionDB
from tests.media_files import BROKEN_PDF, pdf_with_text
from tests.telegram.conftest import ANN, BOB, GROUP, GatewayFactory, user_texts

VOICE = b"OggS fake opus voice note"
TRANSCRIBE = {"CHORUS_LLM__TRANSCRIPTION_MODEL": "whisper-1"}


def voice(file_id: str = "v1", *, size: int = len(VOICE), duration: int = 4) -> dict[str, object]:
    return {
        "file_id": file_id,
        "file_unique_id": file_id,
        "duration": duration,
        "mime_type": "audio/ogg",
        "file_size": size,
    }


def document(file_id: str, name: str, mime: str, size: int) -> dict[str, object]:
    return {
        "file_id": file_id,
        "file_unique_id": file_id,
        "file_name": name,
        "mime_type": mime,
        "file_size": size,
    }


async def test_a_voice_note_is_transcribed_and_answered(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(**TRANSCRIBE)
    tg, llm = gw.telegram, gw.server
    tg.files["v1"] = VOICE
    llm.transcripts[VOICE] = "what is the capital of France"
    llm.reply("Paris.")
    tg.message(None, user_id=ANN, voice=voice())
    [answer] = await tg.wait_messages(ANN, 1)
    await gw.settle()
    assert answer.text == "Paris."
    [heard] = llm.transcription_requests
    assert (heard.model, heard.data, heard.filename.endswith(".ogg")) == ("whisper-1", VOICE, True)
    assert user_texts(llm.requests[0])[-1] == f"{VOICE_MARK}\nwhat is the capital of France"
    with SessionDB(ChorusPaths(gw.stack.settings.home).state_db) as db:
        [record] = db.list_sessions(limit=5)
        stored = [(m.role, m.content) for m in db.get_messages(record.id)]
    assert stored[0] == ("user", f"{VOICE_MARK}\nwhat is the capital of France")


async def test_without_a_transcription_model_a_voice_note_is_declined(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.files["v1"] = VOICE
    tg.message(None, user_id=ANN, voice=voice())
    [reply] = await tg.wait_messages(ANN, 1)
    await gw.settle()
    assert reply.text == media_texts.NO_VOICE
    assert not gw.server.requests and not gw.server.transcription_requests
    assert not tg.calls_of("getFile")


async def test_a_voice_note_past_the_limits_is_declined_unread(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(
        CHORUS_MEDIA__MAX_VOICE_BYTES="1000", CHORUS_MEDIA__MAX_VOICE_SECONDS="60", **TRANSCRIBE
    )
    tg = gw.telegram
    tg.files["v1"] = VOICE
    tg.message(None, user_id=ANN, voice=voice(size=5000))
    tg.message(None, user_id=ANN, voice=voice(duration=120))
    big, long = await tg.wait_messages(ANN, 2)
    await gw.settle()
    assert big.text == media_texts.VOICE_TOO_BIG.format(limit="1,000 bytes")
    assert long.text == media_texts.VOICE_TOO_LONG.format(limit="1 minute")
    assert not gw.server.requests and not gw.server.transcription_requests
    assert not tg.calls_of("getFile")


async def test_a_pdf_and_a_csv_reach_the_turn_as_others_words(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    pdf = pdf_with_text("Invoice XJ-9000", "Total: 42 EUR")
    tg.files["d1"] = pdf
    tg.files["d2"] = b"name,amount\nann,3\nbob,4\n"
    llm.reply("The total is 42 EUR.")
    llm.reply("Bob has 4.")
    doc = document("d1", "invoice.pdf", "application/pdf", len(pdf))
    tg.message(None, user_id=ANN, document=doc, caption="what is the total?")
    await tg.wait_messages(ANN, 1)
    csv = document("d2", "amounts.csv", "text/csv", 24)
    tg.message(None, user_id=ANN, document=csv, caption="how much has bob?")
    await tg.wait_messages(ANN, 2)
    await gw.settle()
    first = user_texts(llm.requests[0])[-1]
    assert first == (
        f"A file shared with the message {QUOTED_MARK}:\n"
        f"> invoice.pdf: Invoice XJ-9000\n> Total: 42 EUR\n{QUOTED_END}\n\nwhat is the total?"
    )
    second = user_texts(llm.requests[1])[-1]
    assert "> amounts.csv: name,amount\n> ann,3\n> bob,4" in second
    assert second.endswith(f"{QUOTED_END}\n\nhow much has bob?")


async def test_a_long_document_is_cut_with_a_note(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_MEDIA__MAX_DOCUMENT_CHARS="10")
    tg, llm = gw.telegram, gw.server
    tg.files["d1"] = b"0123456789abcdefghij"
    tg.message(None, user_id=ANN, document=document("d1", "notes.txt", "text/plain", 20))
    await tg.wait_messages(ANN, 1)
    text = user_texts(llm.requests[0])[-1]
    assert "> notes.txt: 0123456789\n> (cut off here: the file has 20 characters" in text
    assert "abcdefghij" not in text


async def test_unknown_broken_and_oversized_files_get_a_clear_reply(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.files["z1"] = b"PK\x03\x04 zip"
    tg.files["d1"] = BROKEN_PDF
    tg.message(None, user_id=ANN, document=document("z1", "a.zip", "application/zip", 9))
    tg.message(None, user_id=ANN, document=document("d1", "b.pdf", "application/pdf", 80))
    big = document("d2", "c.txt", "text/plain", 50_000_000)
    tg.message(None, user_id=ANN, document=big)
    unknown, broken, too_big = await tg.wait_messages(ANN, 3)
    await gw.settle()
    assert unknown.text == 'I can\'t read this kind of file yet ("a.zip").'
    assert broken.text == media_texts.DOCUMENT_BROKEN.format(name='"b.pdf"')
    assert too_big.text == '"c.txt" is too large for me to read (the limit is 10 MB).'
    assert not gw.server.requests
    assert [c.params["file_id"] for c in tg.calls_of("getFile")] == ["d1"]


async def test_a_reply_to_someones_message_carries_it(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    bob = tg.message("error XJ-9000 on deploy", user_id=BOB, first_name="Bob", chat_id=GROUP)
    llm.reply("XJ-9000 means the disk is full.")
    tg.message(
        "@chorus_test_bot what does this mean?",
        user_id=ANN,
        chat_id=GROUP,
        reply_to=bob["message"],
    )
    await tg.wait_messages(GROUP, 1)
    await gw.settle()
    assert user_texts(llm.requests[0])[-1] == (
        f"The message this one replies to {QUOTED_MARK}:\n"
        f"> Bob: error XJ-9000 on deploy\n{QUOTED_END}\n\nwhat does this mean?"
    )


async def test_a_reply_to_ones_own_message_is_context_not_others_words(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    own = tg.message("my build fails with XJ-9000", user_id=ANN)
    llm.reply("First answer.")
    await tg.wait_messages(ANN, 1)
    llm.reply("It means the disk is full.")
    tg.message("what does it mean?", user_id=ANN, reply_to=own["message"])
    await tg.wait_messages(ANN, 2)
    await gw.settle()
    text = user_texts(llm.requests[1])[-1]
    assert text == (
        "In reply to this earlier message:\n> Ann: my build fails with XJ-9000\n\n"
        "what does it mean?"
    )
    assert QUOTED_MARK not in text


async def test_a_failed_transcription_is_told_and_nothing_reaches_the_model(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**TRANSCRIBE)
    tg, llm = gw.telegram, gw.server
    tg.files["v1"] = VOICE
    llm.transcription_error(503)
    tg.message(None, user_id=ANN, voice=voice())
    [reply] = await tg.wait_messages(ANN, 1)
    await gw.settle()
    assert reply.text == media_texts.VOICE_FAILED
    assert len(llm.transcription_requests) == 1 and not llm.requests

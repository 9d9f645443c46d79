"""/export on Telegram: the person's archive arrives as a document in their private chat."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from pathlib import Path

from memory.paths import ChorusPaths
from tests.telegram.conftest import ANN, GROUP, GatewayFactory


async def test_export_sends_the_archive_as_a_document(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    llm.reply("Noted, the blue door.")
    tg.message("my studio has a blue door", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    await gw.settle()

    tg.message("/export", user_id=ANN)
    await tg.wait_for(lambda: bool(tg.documents), what="a document")
    [document] = tg.documents
    assert document.chat_id == ANN
    assert document.filename == f"chorus-export-telegram-{ANN}.zip"
    with zipfile.ZipFile(io.BytesIO(document.data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        assert manifest["person"] == f"telegram:{ANN}"
        transcripts = [n for n in archive.namelist() if n.startswith("transcripts/")]
        assert transcripts
        contents = [json.loads(archive.read(n)) for n in transcripts]
    said = [m["content"] for t in contents for m in t["messages"]]
    assert "my studio has a blue door" in said
    texts = await tg.wait_messages(ANN, 2)
    assert "file above" in texts[-1].text

    tg.message("/export", user_id=ANN)  # again within the hour
    refused = await tg.wait_messages(ANN, 3)
    assert "again in 60 minutes" in refused[-1].text
    assert len(tg.documents) == 1
    with sqlite3.connect(ChorusPaths(chorus_home).state_db) as db:
        audit = db.execute("SELECT actor, command, args FROM audit_log").fetchall()
    assert (f"user:telegram:{ANN}", "users export", "<person>") in audit


async def test_export_in_a_group_sends_no_file(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("hello", user_id=ANN)  # a private chat, so the bot may write there
    await tg.wait_messages(ANN, 1)
    tg.message("/export", user_id=ANN, chat_id=GROUP)
    notices = await tg.wait_messages(ANN, 2)
    assert "direct chat" in notices[-1].text
    await tg.wait_messages(GROUP, 1)  # the note follows the private answer
    await gw.settle()
    assert not tg.documents
    assert [m.text for m in tg.in_chat(GROUP)] == ["I've sent you a private message."]

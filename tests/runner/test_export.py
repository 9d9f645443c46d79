"""/export through the real gateway: once an hour per person, remembered across a restart;
too large for the platform, the person is told whom to ask and nothing is counted."""

from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
import zipfile
from pathlib import Path

from memory.paths import ChorusPaths
from tests.runner.conftest import GatewayFactory

ARCHIVE = "chorus-export-testchat-2.zip"


async def test_one_export_an_hour_also_after_a_restart(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    gw.server.reply("noted")
    await gw.ask("my locker is number 12")
    assert "file above" in (await gw.ask("/export")).text
    [sent] = gw.adapter.files
    assert (sent.chat_id, sent.filename) == ("dm-2", ARCHIVE)
    with zipfile.ZipFile(io.BytesIO(sent.data)) as archive:
        assert json.loads(archive.read("manifest.json"))["person"] == "testchat:2"

    await gw.clock.advance(30 * 60)
    assert "again in 30 minutes" in (await gw.ask("/export")).text
    assert "file above" in (await gw.ask("/export", user="3")).text  # someone else may

    clock = gw.clock
    await gw.runner.shutdown(5)
    await gw.stack.close()
    again = await make_gateway(clock=clock)  # a restart: the database remembers
    assert "again in 30 minutes" in (await again.ask("/export")).text
    await clock.advance(30 * 60 + 1)
    assert "file above" in (await again.ask("/export")).text
    assert [f.filename for f in again.adapter.files] == [ARCHIVE]


async def test_too_large_for_the_platform_says_whom_to_ask_and_counts_nothing(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    small = dataclasses.replace(gw.adapter.capabilities, max_file_size=100)
    gw.adapter.capabilities = small
    told = (await gw.ask("/export")).text
    assert "chorus users export testchat:2" in told
    assert not gw.adapter.files

    gw.adapter.capabilities = dataclasses.replace(small, max_file_size=10 * 1024 * 1024)
    assert "file above" in (await gw.ask("/export")).text
    assert [f.filename for f in gw.adapter.files] == [ARCHIVE]


async def test_an_erasure_forgets_when_the_person_last_exported(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await make_gateway()
    assert "file above" in (await gw.ask("/export")).text
    await gw.ask("/delete-me")
    await gw.ask("/delete-me CONFIRM")
    with sqlite3.connect(ChorusPaths(chorus_home).state_db) as db:
        rows = db.execute("SELECT person FROM export_requests").fetchall()
    assert rows == []

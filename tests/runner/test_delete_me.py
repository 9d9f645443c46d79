"""/delete-me through the real gateway: confirmation, expiry, erasure, and a clean start."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory.jobs import JobSpec
from memory.paths import ChorusPaths, UserKey
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory
from tests.waiting import until

PERSON = "testchat:2"


async def test_delete_me_confirms_erases_and_starts_clean(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    gw = await make_gateway()
    server.reply("noted")
    await gw.ask("my locker code is 4711", user="2")
    server.reply("hi group")
    await gw.ask("hello group", user="3", chat_id="g1", is_direct=False, mentions_bot=True)
    refused = await gw.ask("/delete-me", user="3", chat_id="g1", is_direct=False)
    assert "direct chat" in refused.text

    asked = await gw.ask("/delete-me", user="2")
    assert "CONFIRM" in asked.text
    await gw.clock.advance(400)  # the confirmation expired
    assert "expires" in (await gw.ask("/delete-me CONFIRM", user="2")).text
    await gw.ask("/delete-me", user="2")
    receipt = (await gw.ask("/delete-me CONFIRM", user="2")).text
    assert "transcripts of testchat:2: erased" in receipt
    await gw.settle()

    state_db = ChorusPaths(chorus_home).state_db
    with sqlite3.connect(state_db) as db:
        assert (
            db.execute("SELECT count(*) FROM sessions WHERE user_key = ?", (PERSON,)).fetchone()[0]
            == 0
        )
        assert (
            db.execute("SELECT count(*) FROM messages WHERE content LIKE '%4711%'").fetchone()[0]
            == 0
        )
        assert (
            db.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH '4711'"
            ).fetchone()[0]
            == 0
        )
        inbox = [str(r) for r in db.execute("SELECT payload FROM inbox").fetchall()]
        audit = db.execute("SELECT command, args, outcome FROM audit_log").fetchall()
    assert ("users erase", "<person>", "ok") in audit
    assert inbox and not [p for p in inbox if "4711" in p]  # others' deliveries stay
    assert all("4711" not in str(row) for row in audit)

    server.reply("hello again")
    assert (await gw.ask("hi, who am I?", user="2")).text == "hello again"
    assert "4711" not in str(server.last_request)


async def test_jobs_queued_before_the_erasure_write_nothing_after_it(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="holographic")
    marker, records = tmp_path / "blocker", tmp_path / "records"
    queue = gw.stack.background.queue
    queue.enqueue(
        JobSpec(
            "tests.queue_jobs.block_then_record",
            (str(records), str(marker), 1),
            session_id="blocker",
            job_id="blocker",
        )
    )
    await until(marker.exists)  # the queue is busy: what follows waits behind it
    server.reply("noted")
    await gw.ask("I prefer dark roast coffee in the morning.", user="2")
    await gw.ask("/delete-me", user="2")
    receipt = (await gw.ask("/delete-me CONFIRM", user="2")).text
    assert "memory provider holographic: erased" in receipt
    assert queue.status().queued >= 1  # the turn's sync and the session's end still wait

    Path(f"{marker}.release").touch()
    await gw.settle()
    person_dir = chorus_home / "providers" / "holographic" / "users" / "testchat" / "2"
    assert not person_dir.exists()
    assert not ChorusPaths(chorus_home).user_dir(UserKey.parse(PERSON)).exists()
    with sqlite3.connect(ChorusPaths(chorus_home).state_db) as db:
        assert (
            db.execute("SELECT count(*) FROM sessions WHERE user_key = ?", (PERSON,)).fetchone()[0]
            == 0
        )


async def test_a_groups_turn_of_an_erased_member_is_not_synced_after_it(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="holographic", CHORUS_SESSIONS__SCOPE="chat")
    marker, records = tmp_path / "blocker", tmp_path / "records"
    gw.stack.background.queue.enqueue(
        JobSpec(
            "tests.queue_jobs.block_then_record",
            (str(records), str(marker), 1),
            session_id="blocker",
            job_id="blocker",
        )
    )
    await until(marker.exists)
    server.reply("noted")
    await gw.ask(
        "I prefer green tea in the afternoon.",
        user="3",
        chat_id="g1",
        is_direct=False,
        mentions_bot=True,
    )
    await gw.ask("/delete-me", user="3")
    assert "erased" in (await gw.ask("/delete-me CONFIRM", user="3")).text
    Path(f"{marker}.release").touch()
    await gw.settle()
    member_dir = chorus_home / "providers" / "holographic" / "users" / "testchat" / "3"
    assert not member_dir.exists()

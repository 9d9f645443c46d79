"""sessions.retention_days: the gateway purges ended sessions past it, hourly, index too."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory.paths import ChorusPaths
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory
from tests.waiting import until

DAY = 86_400.0


def _sessions(state_db: Path) -> set[str]:
    with sqlite3.connect(state_db) as db:
        return {r[0] for r in db.execute("SELECT id FROM sessions WHERE id LIKE 'r-%'")}


def _indexed(state_db: Path, word: str) -> int:
    with sqlite3.connect(state_db) as db:
        found = db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,))
        return int(found.fetchone()[0])


async def test_ended_sessions_past_retention_are_purged(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__RETENTION_DAYS="30")
    sweeper = gw.stack.retention
    assert sweeper is not None
    await until(lambda: sweeper.rounds >= 1)  # the sweep at start is done: asleep for an hour
    db, now = gw.stack.db.db, gw.clock.time()
    for sid, ended, word in (
        ("r-old", now - 31 * DAY, "zanzibar"),
        ("r-recent", now - 29 * DAY, "yokohama"),
        ("r-open", None, "xanadu"),
    ):
        db.create_session(
            sid, platform="testchat", user_key="testchat:2", started_at=now - 40 * DAY
        )
        db.append_message(sid, "user", f"I went to {word}", timestamp=now - 40 * DAY)
        if ended is not None:
            db.end_session(sid, "idle", ended_at=ended)
    state_db = ChorusPaths(chorus_home).state_db
    assert _sessions(state_db) == {"r-old", "r-recent", "r-open"}

    await gw.clock.advance(3600)  # the hourly sweep
    await until(lambda: sweeper.rounds >= 2)
    assert _sessions(state_db) == {"r-recent", "r-open"}
    assert _indexed(state_db, "zanzibar") == 0 and _indexed(state_db, "yokohama") == 1

    await gw.clock.advance(2 * DAY)  # r-recent passes 30 days; an open session never goes
    await until(lambda: sweeper.rounds >= 3)
    assert _sessions(state_db) == {"r-open"}


async def test_off_by_default(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await make_gateway()
    db, now = gw.stack.db.db, gw.clock.time()
    db.create_session(
        "r-old", platform="testchat", user_key="testchat:2", started_at=now - 999 * DAY
    )
    db.end_session("r-old", "idle", ended_at=now - 900 * DAY)
    await gw.clock.advance(3600)
    assert await gw.stack.retention.run_once() == 0  # type: ignore[union-attr]
    assert _sessions(ChorusPaths(chorus_home).state_db) == {"r-old"}

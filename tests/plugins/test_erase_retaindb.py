"""RetainDB: a person's memories and files are exported and deleted; no one else's."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.retaindb_server import FakeRetainDB
from tests.plugins.test_retaindb import ALICE, call, open_rdb

BOB = "telegram:2"


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


def test_export_then_forget(tmp_path: Path, rdb: FakeRetainDB) -> None:
    alice = open_rdb(tmp_path, rdb, context="primary")
    call(alice, "retaindb_remember", content="My PIN hint is blue heron.")
    call(alice, "retaindb_remember", speaker=BOB, content="Bob keeps bees.")
    call(alice, "retaindb_file_put", name="notes.txt", content="blue heron notes")
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert [m["text"] for m in exported["memories"]] == ["My PIN hint is blue heron."]
    assert [f["text"] for f in exported["files"]] == ["blue heron notes"]

    result = alice.forget_user(ALICE)
    assert result.erased and result.removed == 2
    assert rdb.memories_of(ALICE) == []
    assert rdb.files_under("/chorus/telegram%3A1/") == {}
    assert rdb.memories_of(BOB) == ["Bob keeps bees."]
    queue = tmp_path / "providers" / "retaindb" / "queue.db"
    with sqlite3.connect(queue) as db:
        for table in ("writes", "recall", "turns", "owned", "dead"):
            rows = db.execute(f"SELECT COUNT(*) FROM {table} WHERE user_id = ?", (ALICE,))
            assert rows.fetchone()[0] == 0, table
    alice.shutdown()

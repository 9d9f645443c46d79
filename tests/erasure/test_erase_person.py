"""Erasing a person leaves nothing of them in the shared database (SQLite or PostgreSQL,
search index included), their profile or their memory provider; others keep theirs."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gateway.access import PairingRequests
from memory.database import Location
from memory.erasure import Tombstones, erase_person
from memory.paths import ChorusPaths, UserKey
from memory.people import PeopleStore
from memory.preferences import PreferenceStore
from memory.providers import MemoryProvider
from memory.store import DiskMemoryFiles, PostgresMemoryFiles
from memory.store._staged import StagedWrites
from memory.transcripts import SessionDB
from memory.usage_ledger import LedgerRow, UsageLedger
from tests.plugins.holographic_cases import open_provider, tool

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ALICE, BOB = "telegram:1", "telegram:2"
SECRET = "blueheron"


def _fill(where: Location, home: Path, files: Any) -> None:
    paths = ChorusPaths(home)
    with SessionDB(where) as db:
        for user, said in ((ALICE, f"my PIN hint is {SECRET}"), (BOB, "I keep bees")):
            sid = f"s-{user}"
            db.create_session(sid, platform="telegram", user_key=user, chat_id=user[9:])
            db.append_message(sid, "user", said)
            db.append_message(sid, "assistant", f"noted: {said}")
        group = "telegram#chat:-100"
        db.create_session("s-group", platform="telegram", user_key=group, chat_id="-100")
        db.append_message("s-group", "user", "hello all", speaker=ALICE)
    for user, entry in ((ALICE, f"Alice: {SECRET}"), (BOB, "Bob: bees")):
        files.edit(paths.user_file(UserKey.parse(user)), lambda _e, x=entry: [x])
    with StagedWrites(where) as staged:
        staged.stage(user_key=ALICE, session_id="s-a", action="add", content=f"fact {SECRET}")
    with UsageLedger(where) as ledger:
        ledger.record([LedgerRow(1.0, ALICE, "s-a", "turn", "m", 10, 0, 5, False, None)])
    with PreferenceStore(where) as preferences:
        for user in (ALICE, BOB):
            preferences.set(user, "voice_replies", "on", 1.0)
    with PairingRequests(where) as asks:  # what admins were shown of her asking to pair
        asks.open(ALICE, f"Alice {SECRET}", "telegram", "1", 1.0, 3600.0)
    provider = open_provider(home, ALICE)
    tool(provider, action="add", content=f"The PIN hint is {SECRET}.")
    tool(provider, action="add", content="Bob keeps bees.", speaker=BOB)
    provider.shutdown()


def _provider_for(home: Path) -> Any:
    def make(key: str) -> MemoryProvider:
        return open_provider(home, key)

    return make


def _check_sqlite(state_db: Path) -> None:
    with sqlite3.connect(state_db) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            if table.startswith("messages_fts") or table == "erasures":
                continue
            for row in db.execute(f"SELECT * FROM {table}"):
                text = " ".join(str(v) for v in row)
                if "s-group" in text:
                    continue  # a group's session: listed for an admin to review
                assert SECRET not in text and ALICE not in text, (table, row)
        assert (
            db.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (SECRET,)
            ).fetchall()
            == []
        )
        assert (
            db.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'bees'"
            ).fetchone()[0]
            == 2
        )


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_nothing_of_the_person_remains(tmp_path: Path, engine: str, request: Any) -> None:
    home = tmp_path / "home"
    paths = ChorusPaths(home)
    where: Location
    if engine == "sqlite":
        where, files = paths.state_db, None
        store: Any = DiskMemoryFiles()
    else:
        where = request.getfixturevalue("postgres_url")
        files = store = PostgresMemoryFiles(str(where), paths.memories_dir)
    _fill(where, home, store)

    receipt = erase_person(
        ALICE,
        where=where,
        paths=paths,
        files=files,
        provider_for=_provider_for(home),
        now=lambda: 50.0,
    )

    assert receipt.complete, receipt.text()
    assert "memory provider holographic: erased" in receipt.text()
    assert any("1 group sessions" in item for item in receipt.review)
    with SessionDB(where) as db:
        assert db.for_user(ALICE).search(SECRET) == []
        assert db.for_user(ALICE).list_sessions() == []
        assert [s.user_key for s in db.for_user(BOB).list_sessions()] == [BOB]
        assert db.for_user(BOB).search("bees")
    assert store.read(paths.user_file(UserKey.parse(ALICE))) == []
    assert store.read(paths.user_file(UserKey.parse(BOB))) == ["Bob: bees"]
    assert not (home / "providers" / "holographic" / "users" / "telegram" / "1").exists()
    with PreferenceStore(where) as preferences:  # /voice on: gone with the person
        assert preferences.get([ALICE], "voice_replies") is None
        assert preferences.get([BOB], "voice_replies") == "on"
    if engine == "sqlite":
        _check_sqlite(paths.state_db)
        assert not paths.user_dir(UserKey.parse(ALICE)).exists()
    else:
        assert [n for n, _ in files.all_files() if "telegram/1" in n] == []
        files.close()
    with Tombstones(where) as tombstones:
        assert tombstones.erased_since(ALICE, 49.0) and not tombstones.erased_since(ALICE, 51.0)
        assert tombstones.erased_at(BOB) is None


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_linked_person_is_erased_on_every_account_and_under_the_person_key(
    tmp_path: Path, engine: str, request: Any
) -> None:
    home = tmp_path / "home"
    paths = ChorusPaths(home)
    where: Location
    if engine == "sqlite":
        where, files = paths.state_db, None
        store: Any = DiskMemoryFiles()
    else:
        where = request.getfixturevalue("postgres_url")
        files = store = PostgresMemoryFiles(str(where), paths.memories_dir)
    _fill(where, home, store)
    slack = "slack:U1"
    with PeopleStore(where) as people:
        person = people.link(ALICE, slack, by=ALICE, at=10.0).person
    with SessionDB(where) as db:
        db.create_session("s-slack", platform="slack", user_key=slack, chat_id="D1")
        db.append_message("s-slack", "user", f"on slack: {SECRET}")
    store.edit(paths.user_file(UserKey.parse(person)), lambda _e: [f"Person: {SECRET}"])
    with UsageLedger(where) as ledger:
        ledger.record([LedgerRow(2.0, person, "s-slack", "turn", "m", 10, 0, 5, False, None)])
    linked = open_provider(home, person)
    tool(linked, action="add", content=f"The person's hint is {SECRET}.")
    linked.shutdown()

    receipt = erase_person(
        slack,  # asked from the other account: the whole person goes
        where=where,
        paths=paths,
        files=files,
        provider_for=_provider_for(home),
        now=lambda: 50.0,
    )

    assert receipt.complete, receipt.text()
    assert receipt.accounts == [slack, ALICE, person]
    with SessionDB(where) as db:
        for key in (ALICE, slack, person):
            assert db.for_user(key).search(SECRET) == []
            assert db.for_user(key).list_sessions() == []
    for key in (ALICE, slack, person):
        assert store.read(paths.user_file(UserKey.parse(key))) == []
    with PeopleStore(where) as people:
        assert people.person_of(ALICE) == ALICE and people.accounts_of(person) == [person]
    if engine == "sqlite":
        _check_sqlite(paths.state_db)
        with sqlite3.connect(paths.state_db) as db:
            for table in ("usage_ledger", "people"):
                rows = [" ".join(map(str, r)) for r in db.execute(f"SELECT * FROM {table}")]
                assert not [r for r in rows if person in r or slack in r], (table, rows)
    else:
        files.close()
    with Tombstones(where) as tombstones:
        assert all(tombstones.erased_since(k, 49.0) for k in (ALICE, slack, person))

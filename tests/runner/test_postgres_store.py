"""A gateway on PostgreSQL (``database.url``); a SQLite home moved there by ``chorus migrate-db``.

Real PostgreSQL (a throwaway cluster), the real openai client against the fake
LLM, the in-memory adapter; ``chorus migrate-db`` runs as the operator runs it,
a real process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gateway.access import GatewayDB
from memory.paths import ChorusPaths, UserKey
from memory.store import MemoryStore, PostgresMemoryFiles
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory

pytest_plugins = ["tests.fakes.postgres_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")


def migrate(home: Path, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200"})
    return subprocess.run(
        [str(CHORUS), "migrate-db", "--to", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


async def test_a_gateway_keeps_everything_in_postgres(
    make_gateway: GatewayFactory, server: FakeOpenAI, postgres_url: str, chorus_home: Path
) -> None:
    gw = await make_gateway(DATABASE_URL=postgres_url)
    server.tool_call(
        "memory", {"action": "add", "target": "user", "content": "Likes the word zanzibar"}
    )
    server.reply("hello from postgres")
    reply = await gw.ask("hi there, the word is zanzibar", user="2")
    assert reply.text == "hello from postgres"
    await gw.settle()
    memories = ChorusPaths(chorus_home).memories_dir
    with PostgresMemoryFiles(postgres_url, memories) as files:
        stored = dict(files.all_files())
    assert stored == {"users/testchat/2/USER.md": "Likes the word zanzibar"}
    assert not list(memories.rglob("*.md"))  # nothing of it on this disk
    with SessionDB(postgres_url) as db:
        [session] = db.list_sessions()
        assert session.user_key == "testchat:2"
        assert [m.content for m in db.get_messages(session.id) if m.role == "user"] == [
            "hi there, the word is zanzibar"
        ]
        assert [hit.session_id for hit in db.search("testchat:2", "zanzibar")] == [session.id]
        assert db.search("testchat:3", "zanzibar") == []
    with SessionDB(ChorusPaths(chorus_home).state_db) as local:
        assert local.list_sessions() == []  # nothing went to the SQLite file


async def test_migrate_db_moves_a_sqlite_home_and_the_gateway_serves_it(
    make_gateway: GatewayFactory, server: FakeOpenAI, postgres_url: str, chorus_home: Path
) -> None:
    gw = await make_gateway(CHORUS_AUTH__POLICY="pairing", CHORUS_AUTH__ALLOWED_USERS="testchat:2")
    server.reply("noted, lighthouse")
    await gw.ask("remember the lighthouse keeper", user="2")
    server.reply("second answer")
    await gw.ask("and the second thing", user="2")
    await gw.settle()
    state_db = ChorusPaths(chorus_home).state_db
    with SessionDB(state_db) as before:
        sessions_before = [(s.id, s.message_count) for s in before.list_sessions()]
        messages_before = [
            (m.id, m.role, m.content)
            for s in before.list_sessions()
            for m in before.get_messages(s.id)
        ]
    await gw.runner.shutdown(5)
    await gw.stack.close()
    paths = ChorusPaths(chorus_home)
    store = MemoryStore(paths.memory_file, paths.user_file(UserKey("testchat", "2")))
    assert store.add("memory", "The team meets on Tuesdays")["success"]
    assert store.add("user", "Keeps lighthouses")["success"]
    with GatewayDB(state_db) as local:
        local.set_access("testchat:7", "allowed", "cli:root", 1_000.0)
        local.audit("cli:root", "/allow", "testchat:7", "ok", 1_000.0)
        access_before = (local.access_records(), local.audit_entries())

    done = migrate(chorus_home, postgres_url)
    assert done.returncode == 0, done.stderr
    assert "sessions: 1 rows" in done.stdout
    assert "memory files: 2" in done.stdout
    with PostgresMemoryFiles(postgres_url, paths.memories_dir) as files:
        assert dict(files.all_files()) == {
            "MEMORY.md": "The team meets on Tuesdays",
            "users/testchat/2/USER.md": "Keeps lighthouses",
        }
    assert "hunter" not in done.stdout + done.stderr

    with SessionDB(postgres_url) as db:
        assert [(s.id, s.message_count) for s in db.list_sessions()] == sessions_before
        copied = [
            (m.id, m.role, m.content) for s in db.list_sessions() for m in db.get_messages(s.id)
        ]
        assert copied == messages_before
        assert len(db.search("testchat:2", "lighthouse")) >= 1
    with GatewayDB(postgres_url) as access:
        assert (access.access_records(), access.audit_entries()) == access_before
        assert access.audit("cli:root", "/deny", "testchat:7", "ok", 2_000.0) > max(
            entry.id for entry in access_before[1]
        )  # new rows never collide with copied ones

    again = migrate(chorus_home, postgres_url)
    assert again.returncode == 1
    assert "already holds 1 sessions" in again.stderr

    served = await make_gateway(
        DATABASE_URL=postgres_url,
        CHORUS_AUTH__POLICY="pairing",
        CHORUS_AUTH__ALLOWED_USERS="testchat:2",
    )
    server.reply("still here")
    reply = await served.ask("are you there?", user="2")
    assert reply.text == "still here"
    system = server.last_request["messages"][0]["content"]
    assert "Tuesdays" in str(system) and "Keeps lighthouses" in str(system)  # served from PG
    await served.settle()
    with SessionDB(postgres_url) as db:
        newest, oldest = db.list_sessions()
        assert oldest.id == sessions_before[0][0] and oldest.ended_at is not None
        assert newest.user_key == "testchat:2" and newest.ended_at is None
        new_ids = [m.id for m in db.get_messages(newest.id)]
        assert min(new_ids) > max(m[0] for m in messages_before)
        assert len(db.search("testchat:2", "lighthouse")) >= 1  # the old session is still found

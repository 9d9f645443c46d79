"""``chorus backup`` and ``chorus restore`` in PostgreSQL mode keep every table.

Real PostgreSQL (a throwaway cluster), real ``chorus`` processes. The source
database is filled through chorus's own components, one or more rows in every
table they make; the backup is restored into a second, empty database, which
must then hold the very same rows, search them, and hand out new ids past the
restored ones. A backup taken while another process appends messages restores
every table as of one instant.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from gateway.access import GatewayDB
from gateway.access._tables import PairingCode
from gateway.sessions import Inbox
from memory.approvals import Approval, ApprovalStore
from memory.backup import MANIFEST, BackupError, write_backup
from memory.backup_restore import restore_backup
from memory.backup_verify import verify_backup
from memory.jobs import JobLedger, JobSpec, JobState, Outbox
from memory.paths import ChorusPaths
from memory.providers import ProviderHealth
from memory.secrets import SecretKey, SecretStore
from memory.store import PostgresMemoryFiles, StagedWrites
from memory.transcripts import PG_SCHEMA_VERSION, PlatformPart, SessionDB
from tests.fakes.postgres_server import PostgresServer

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ROOT = Path(__file__).resolve().parents[2]
CHORUS = Path(sys.executable).with_name("chorus")
ALICE = "telegram:42"
SPECIAL = "tab\there, a newline\nthere, a backslash \\ and a quote ' — ünïcode"


def run(home: Path, *args: str, url: str | None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHORUS_", "OPENAI_")) and k != "DATABASE_URL"
    }
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200", "PYTHONPATH": str(ROOT)})
    if url is not None:
        env["DATABASE_URL"] = url
    return subprocess.run(
        [str(CHORUS), *args], capture_output=True, text=True, env=env, timeout=300
    )


def fill(url: str, home: Path) -> None:
    """Rows in every table chorus keeps in PostgreSQL, each written by its own component."""
    with SessionDB(url) as db:
        db.create_session("s1", platform="telegram", user_key=ALICE, chat_id="42", model="m")
        epoch = db.take_epoch("s1")
        db.append_message("s1", "user", "Where do the bees swarm?", epoch=epoch)
        db.append_message("s1", "assistant", "The bees swarm in May. " + SPECIAL, epoch=epoch)
        db.append_message("s1", "tool", None, tool_call_id="c1", tool_name="memory", token_count=7)
        merged = (PlatformPart("171.1", 5), PlatformPart("171.2", 10))  # two messages, one turn
        db.append_message("s1", "user", "Bees?\n\nAnd wasps?", platform_message_id=merged)
        db.end_session("s1", "idle")
        db.create_session("s2", platform="slack", user_key="slack:U1", parent_session_id="s1")
    with GatewayDB(url) as access:
        access.install_salt()
        access.set_access(ALICE, "allowed", "admin", 1000.5)
        access.take_pairing_quota("telegram:43", 1000.0, 3600.0, 5)
        access.add_pairing_code(
            PairingCode("hash-1", "telegram:43", "telegram", "43", 1000.0, 2000.0)
        )
        access.audit("telegram:1", "/allow", ALICE, "ok", 1000.25)
    with Inbox(url) as inbox:
        inbox.take("telegram", "update-1", '{"text": "hello"}')
        inbox.take("telegram", "update-2", '{"text": "again"}')
        inbox.done("telegram", ["update-1"])
    with StagedWrites(url) as staged:
        first = staged.stage(user_key=ALICE, session_id="s1", action="add", content="Bees: May")
        second = staged.stage(
            user_key=ALICE, session_id="s1", action="add", content="Likes tea", profile=ALICE
        )
        staged.mark_shown([first, second])
    with JobState(url) as state:
        state.mark_done("summary:s1", 1000.0)
    with JobLedger(url) as ledger:
        ledger.record(JobSpec("memory.jobs.summarise", ("s1",), "s1", "job-1", "summary"))
        ledger.take_lease("s1", "job-1", "worker-1", 60.0)
    with Outbox(url) as outbox:
        trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"  # a turn's trace
        outbox.put(JobSpec("memory.jobs.summarise", ("s2",), "s2", "job-2", trace=trace))
    with ProviderHealth(url) as health:
        health.started("holographic", "primary")
        health.failed("holographic", "prefetch", "timed out")
    with SecretStore(url, SecretKey("backup-test-key-0123456789abcdefghij")) as secrets:
        secrets.set("telegram:42", "GITHUB_TOKEN", "ghp_backup_value", 1.0)
        secrets.request("telegram:42", "42", "OTHER_TOKEN", 2_000_000_000.0)
    with ApprovalStore(url) as approvals:
        waiting = Approval(
            "", "telegram:42", "telegram:42", "telegram", "42", None, "s1", "demo__echo",
            '{"text": "hi"}', "process-1", "pending", None, 1.0, 121.0,
        )  # fmt: skip
        approvals.create(waiting)
    with PostgresMemoryFiles(url, ChorusPaths(home).memories_dir) as files:
        files.write_text("MEMORY.md", "Deploys go through CI")
        files.write_text("users/telegram/42/USER.md", "Alice prefers short answers")


def contents(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the database and its rows (every column), in a stable order."""
    with psycopg.connect(url) as conn:
        names = [
            str(row[0])
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                " ORDER BY tablename"
            )
        ]
        found: dict[str, list[tuple[Any, ...]]] = {}
        for name in names:
            rows = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(name)))
            found[name] = sorted((tuple(row) for row in rows), key=repr)
    return found


def test_backup_in_postgres_mode_restores_every_table_into_an_empty_database(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    source_url = postgres_server.create_database()
    target_url = postgres_server.create_database()
    source, target = tmp_path / "source", tmp_path / "target"
    fill(source_url, source)
    before = contents(source_url)
    assert all(before.values()), [name for name, rows in before.items() if not rows]
    assert len(before) >= 17  # every table chorus makes (sessions … queue_outbox)

    archive = tmp_path / "backup.tar.gz"
    backed = run(source, "backup", str(archive), "--verify", url=source_url)
    assert backed.returncode == 0, backed.stdout + backed.stderr
    assert f"{len(before)} PostgreSQL tables" in backed.stdout
    assert "pg_dump" not in backed.stdout

    checked = run(tmp_path / "elsewhere", "restore", "--check", str(archive), url=None)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(before)} PostgreSQL tables" in checked.stdout

    SessionDB(target_url).close()  # a gateway started there once: empty tables, no rows
    GatewayDB(target_url).close()
    restored = run(target, "restore", str(archive), url=target_url)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert f"restored {len(before)} tables" in restored.stdout
    assert contents(target_url) == before  # every row of every table, every column

    shown = run(target, "memory", "show", url=target_url)
    assert "Deploys go through CI" in shown.stdout, shown.stdout + shown.stderr
    assert not ChorusPaths(target).memory_file.exists()  # in PostgreSQL, not on the disk

    with SessionDB(target_url) as db:
        hits = db.search(ALICE, "swarm bees")
        assert sorted((h.session_id, h.role) for h in hits) == [
            ("s1", "assistant"),
            ("s1", "user"),
        ]  # the search vector was computed again for every restored message
        assert db.search(ALICE, "memory") == []  # tool output stays out of the search
        assert [m.content for m in db.get_messages("s1")][1].endswith(SPECIAL)
        db.create_session("s3", platform="telegram", user_key=ALICE)
        new_id = db.append_message("s3", "user", "a new message after the restore")
        newest = [s.id for s in db.list_sessions(limit=10)]
    assert new_id > max(row[0] for row in before["messages"])
    assert newest[0] == "s3"  # sessions keep their order, the new one after them
    with StagedWrites(target_url) as staged:
        staged_id = staged.stage(user_key=ALICE, session_id="s3", action="add", content="new")
    assert staged_id > max(row[0] for row in before["staged_memory_writes"])
    with Outbox(target_url) as outbox:
        queued = outbox.put(JobSpec("memory.jobs.x", (), "s3", "job-3"))
    assert queued > before["queue_outbox"][0][0]
    with GatewayDB(target_url) as access:
        assert access.audit("telegram:1", "/deny", "x", "ok", 2000.0) > before["audit_log"][0][0]


def test_restore_refuses_a_database_that_holds_rows(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    source_url = postgres_server.create_database()
    target_url = postgres_server.create_database()
    fill(source_url, tmp_path / "source")
    with SessionDB(target_url) as db:
        db.create_session("theirs", platform="telegram", user_key="telegram:7")
    held = contents(target_url)

    archive = tmp_path / "backup.tar.gz"
    assert run(tmp_path / "source", "backup", str(archive), url=source_url).returncode == 0
    home = tmp_path / "target"
    refused = run(home, "restore", str(archive), url=target_url)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "not empty" in refused.stdout + refused.stderr
    assert "sessions (1 rows)" in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stdout + refused.stderr
    assert contents(target_url) == held  # nothing written into the database
    assert not home.exists() or not any(home.iterdir())  # nor into the home

    forced = run(home, "restore", str(archive), "--force", url=target_url)
    assert forced.returncode == 1 and "not empty" in forced.stdout + forced.stderr
    assert contents(target_url) == held


def rewrite(archive: Path, out: Path, change: dict[str, bytes | None]) -> Path:
    """A copy of ``archive`` with members replaced (bytes) or removed (None), the
    manifest's sizes left as they were (a damaged archive) unless it is replaced."""
    with tarfile.open(archive) as old, tarfile.open(out, "w:gz") as new:
        for member in old.getmembers():
            data = change.get(member.name, old.extractfile(member).read())  # type: ignore[union-attr]
            if data is None:
                continue
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            new.addfile(info, io.BytesIO(data))
    return out


def test_verify_reads_every_table_and_restore_refuses_newer_tables(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    source_url = postgres_server.create_database()
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    fill(source_url, home)
    archive = write_backup(home, tmp_path / "whole.tar.gz", where=source_url).path
    report = verify_backup(archive)
    assert report.tables >= 17 and report.rows == sum(map(len, contents(source_url).values()))
    with tarfile.open(archive) as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())  # type: ignore[union-attr]
        sessions = tar.extractfile("postgresql/sessions.copy").read()  # type: ignore[union-attr]
    assert manifest["backend"] == "postgresql"
    assert manifest["postgresql"]["schema_versions"] == {"transcripts": PG_SCHEMA_VERSION}
    assert manifest["postgresql"]["tables"]["sessions"]["rows"] == 2

    cut = rewrite(archive, tmp_path / "cut.tar.gz", {"postgresql/sessions.copy": sessions[:-1]})
    with pytest.raises(BackupError, match=r"postgresql/sessions\.copy \(table sessions\)"):
        verify_backup(cut)
    one_row = sessions.split(b"\n")[0] + b"\n"
    short = rewrite(archive, tmp_path / "short.tar.gz", {"postgresql/sessions.copy": one_row})
    with pytest.raises(BackupError, match="1 rows, the manifest says 2"):
        verify_backup(short)
    gone = rewrite(archive, tmp_path / "gone.tar.gz", {"postgresql/inbox.copy": None})
    with pytest.raises(BackupError, match=r"inbox\.copy \(table inbox\): named in the manifest"):
        verify_backup(gone)

    manifest["postgresql"]["schema_versions"]["transcripts"] = 99
    newer = rewrite(archive, tmp_path / "newer.tar.gz", {MANIFEST: json.dumps(manifest).encode()})
    target_url = postgres_server.create_database()
    with pytest.raises(BackupError, match="schema version 99, newer than this chorus"):
        restore_backup(newer, tmp_path / "target", where=target_url)
    assert contents(target_url) == {}  # nothing was made in the database
    assert not (tmp_path / "target").exists()


WRITER = """
import sys
from memory.transcripts import SessionDB

db = SessionDB(sys.argv[1])
number = 0
while True:
    number += 1
    db.append_message("busy", "user", f"message {number} " + "the bees swarm in May " * 4)
    print(number, flush=True)  # committed: the message and the session's count together
"""


class Writer:
    """Another process appending messages to session ``busy`` without pause."""

    def __init__(self, url: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, url], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        self.committed = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.committed = int(line)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while self.committed < count:
            assert self.proc.poll() is None, "the writer stopped"
            assert time.monotonic() < deadline, f"only {self.committed} messages written"
            time.sleep(0.01)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def counts(url: str) -> tuple[int, int]:
    """Session ``busy``'s message counter and the messages it has, read together."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT message_count, (SELECT count(*) FROM messages WHERE session_id = 'busy')"
            " FROM sessions WHERE id = 'busy'"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_backup_taken_during_writes_restores_every_table_as_of_one_instant(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    source_url = postgres_server.create_database()
    target_url = postgres_server.create_database()
    with SessionDB(source_url) as db:
        db.create_session("busy", platform="telegram", user_key=ALICE)
        db.create_session("old", platform="telegram", user_key=ALICE)
        with db.batch():  # enough bytes that archiving the messages takes a while
            for number in range(600):
                db.append_message("old", "assistant", f"{number} " + os.urandom(3000).hex())

    writer = Writer(source_url)
    try:
        writer.wait_for(20)
        started = counts(source_url)[1]
        archive = tmp_path / "backup.tar.gz"
        backed = run(tmp_path / "source", "backup", str(archive), url=source_url)
        assert backed.returncode == 0, backed.stdout + backed.stderr
        writer.wait_for(writer.committed + 20)
    finally:
        writer.stop()
    ended = counts(source_url)[1]

    restored = run(tmp_path / "target", "restore", str(archive), url=target_url)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    counter, messages = counts(target_url)
    assert started < messages < ended  # the writes went on while the backup was taken
    assert counter == messages  # and sessions and messages are of the same instant
    with SessionDB(target_url) as db:
        assert db.append_message("busy", "user", "after the restore") > 0
    assert counts(target_url) == (messages + 1, messages + 1)

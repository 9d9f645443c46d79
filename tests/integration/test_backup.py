"""``chorus backup`` while the gateway is answering, ``chorus restore`` elsewhere: every
transcript and profile is there, search works, ``chorus doctor`` passes; unsafe or
newer archives and non-empty homes are refused."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.backup import MANIFEST, BackupError, write_backup
from memory.backup_restore import restore_backup
from memory.paths import ChorusPaths, UserKey
from memory.transcripts import SCHEMA_VERSION, SessionDB
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN
from tests.telegram.test_telegram_process import CHORUS, free_port, gateway_env, wait_ready


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


def chorus(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHORUS), *args], env=env, capture_output=True, text=True, timeout=120
    )


async def test_backup_while_answering_then_restore_elsewhere(
    chorus_home: Path, tmp_path: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    env = gateway_env(chorus_home, server, telegram, port)
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    backups = tmp_path / "backups"
    try:
        await wait_ready(port)
        server.tool_call("memory", {"action": "add", "target": "user", "content": "Ann keeps bees"})
        server.reply("Noted: you keep bees.")
        telegram.message("I keep bees on the roof", user_id=ANN)
        await telegram.wait_messages(ANN, 1)
        server.reply("A slow answer about honey.", delay=3)
        telegram.message("tell me about honey", user_id=ANN)
        await telegram.wait_for(lambda: server.in_flight == 1, what="an answer in progress")
        made = await asyncio.to_thread(chorus, "backup", str(backups), env=env)  # mid-answer
        assert made.returncode == 0, made.stderr
        await telegram.wait_messages(ANN, 2, timeout=30)
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [archive] = list(backups.iterdir())
    assert archive.name.startswith("chorus-backup-") and archive.name.endswith(".tar.gz")
    assert archive.stat().st_mode & 0o077 == 0
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    profile_in_home = ChorusPaths(chorus_home).user_file(UserKey.parse(f"telegram:{ANN}"))
    assert {"state.db", MANIFEST, profile_in_home.relative_to(chorus_home).as_posix()} <= names
    assert not any(n.endswith(("-wal", "-shm", ".env")) for n in names)

    restored = tmp_path / "restored"
    restore_env = {**env, "CHORUS_HOME": str(restored)}
    done = await asyncio.to_thread(chorus, "restore", str(archive), env=restore_env)
    assert done.returncode == 0, done.stderr
    assert restored.stat().st_mode & 0o777 == 0o700
    paths = ChorusPaths(restored)
    profile = paths.user_file(UserKey.parse(f"telegram:{ANN}"))
    assert "Ann keeps bees" in profile.read_text()
    with SessionDB(paths.state_db) as db:
        [record] = db.list_sessions(limit=5)
        texts = [m.content for m in db.get_messages(record.id)]
        hits = db.search(f"telegram:{ANN}", "bees roof")
    assert "I keep bees on the roof" in texts and "tell me about honey" in texts
    assert hits and hits[0].session_id == record.id
    doctor = await asyncio.to_thread(chorus, "doctor", env=restore_env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_restore_refuses_a_home_that_is_not_empty_unless_forced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True, mode=0o700)
    (home / "memories" / "MEMORY.md").write_text("the team's notes")
    (home / ".env").write_text("OPENAI_API_KEY=sk-never-in-a-backup")
    summary = write_backup(home, tmp_path / "one.tar.gz")
    assert summary.files == 1  # MEMORY.md; no state.db yet, .env left out
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    with pytest.raises(BackupError, match="not empty"):
        restore_backup(summary.path, other)
    restore_backup(summary.path, other, force=True)
    assert (other / "memories" / "MEMORY.md").read_text() == "the team's notes"
    assert not (other / ".env").exists()
    with pytest.raises(BackupError, match="exists already"):
        write_backup(home, summary.path)


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_unsafe_foreign_and_newer_archives_are_refused(tmp_path: Path) -> None:
    manifest = json.dumps({"format": 1, "schema_version": SCHEMA_VERSION}).encode()
    evil = _archive(tmp_path / "evil.tar.gz", {MANIFEST: manifest, "../outside.txt": b"x"})
    with pytest.raises(BackupError, match="unsafe path"):
        restore_backup(evil, tmp_path / "home-a")
    assert not (tmp_path / "outside.txt").exists()
    foreign = _archive(tmp_path / "foreign.tar.gz", {"hello.txt": b"hi"})
    with pytest.raises(BackupError, match="not a chorus backup"):
        restore_backup(foreign, tmp_path / "home-b")
    newer = json.dumps({"format": 1, "schema_version": SCHEMA_VERSION + 1}).encode()
    future = _archive(tmp_path / "future.tar.gz", {MANIFEST: newer})
    with pytest.raises(BackupError, match="newer than this chorus"):
        restore_backup(future, tmp_path / "home-c")
    assert not os.path.exists(tmp_path / "home-c" / "state.db")


def test_backups_kept_inside_the_home_are_not_backed_up_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True, mode=0o700)
    (home / "memories" / "MEMORY.md").write_text("notes")
    with SessionDB(home / "state.db") as db:
        db.create_session("s1", platform="telegram", user_key="telegram:1")
    first = write_backup(home, home / "backups", now=1_000_000)
    second = write_backup(home, home / "backups", now=2_000_000)
    assert first.path != second.path and first.path.parent == home / "backups"
    with tarfile.open(second.path) as tar:
        names = set(tar.getnames())
    assert names == {"state.db", "memories/MEMORY.md", MANIFEST}
    assert not any(p.name.startswith("chorus-backup-") and p.is_dir() for p in home.rglob("*"))

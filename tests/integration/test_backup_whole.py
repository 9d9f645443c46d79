"""Backups that keep everything: every SQLite database of the home (found by its header)
is copied with SQLite's online backup, so facts still in a provider's WAL survive a
backup taken under load; ``--verify`` and ``restore --check`` find a damaged database;
``--keep N`` prunes only chorus's own dated archives; no backup is ever inside another."""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

from memory.backup import MANIFEST, write_backup
from tests.telegram.test_telegram_process import CHORUS

ROOT = Path(__file__).resolve().parents[2]
FACTS = Path("providers/holographic/users/telegram/1/facts.db")

WRITER = """
import sys, time
from pathlib import Path
from plugins.memory.holographic._schema import open_database

db = open_database(Path(sys.argv[1]))
db.execute("PRAGMA wal_autocheckpoint = 0")  # every fact stays in the WAL
number = 0
while True:
    number += 1
    now = time.time()
    db.execute(
        "INSERT INTO facts (content, norm, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (f"fact {number}: " + "the bees swarm in May " * 8, f"fact {number}", now, now),
    )
    print(number, flush=True)  # committed (autocommit)
    time.sleep(0.002)
"""


def cli_env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("CHORUS_")}
    return {**keep, "CHORUS_HOME": str(home), "PYTHONPATH": str(ROOT)}


def chorus(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHORUS), *args], env=cli_env(home), capture_output=True, text=True, timeout=180
    )


class Writer:
    """Another process adding Holographic facts to ``facts.db`` (WAL mode) without pause."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, mode=0o700)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)],
            env=cli_env(path.parent),
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.committed = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.committed = int(line)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while self.committed < count:
            assert self.proc.poll() is None, "the writer stopped"
            assert time.monotonic() < deadline, f"only {self.committed} facts written"
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=10)


def integrity(path: Path) -> list[tuple[str]]:
    with sqlite3.connect(path) as db:
        rows: list[tuple[str]] = db.execute("PRAGMA integrity_check").fetchall()
    db.close()
    return rows


def test_a_backup_under_load_restores_every_committed_fact(tmp_path: Path) -> None:
    home, restored, backups = tmp_path / "home", tmp_path / "restored", tmp_path / "backups"
    writer = Writer(home / FACTS)
    try:
        writer.wait_for(300)
        committed = writer.committed  # every fact up to here is committed before the backup
        made = chorus("backup", str(backups), home=home)
        assert made.returncode == 0, made.stderr
        during = writer.committed
    finally:
        writer.stop()
    assert during > committed  # the writer kept writing while the backup ran
    [archive] = list(backups.iterdir())
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert FACTS.as_posix() in names
    assert not any(name.endswith(("-wal", "-shm")) for name in names)

    done = chorus("restore", str(archive), home=restored)
    assert done.returncode == 0, done.stderr
    facts = restored / FACTS
    assert integrity(facts) == [("ok",)]
    with sqlite3.connect(facts) as db:
        [(kept,)] = db.execute("SELECT count(*) FROM facts WHERE id <= ?", (committed,))
        [(text,)] = db.execute("SELECT content FROM facts WHERE id = ?", (committed,))
    db.close()
    assert kept == committed
    assert text.startswith(f"fact {committed}: the bees swarm")


def _wal_database(path: Path, rows: int) -> sqlite3.Connection:
    """A database whose rows are all still in its WAL; the connection keeps it so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, body TEXT)")
    for number in range(rows):
        db.execute("INSERT INTO items (body) VALUES (?)", (f"item {number}",))
    return db


def test_every_database_is_found_by_its_header_and_copied_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_dbs = [
        _wal_database(home / "providers/retaindb/queue.db", 50),
        _wal_database(home / "providers/hindsight/store.data", 70),  # any name
    ]
    (home / "providers/notes.db").write_text("not a database, copied as it is")
    try:
        summary = write_backup(home, tmp_path / "one.tar.gz")
    finally:
        for db in open_dbs:
            db.close()
    scratch = tmp_path / "unpacked"
    with tarfile.open(summary.path) as tar:
        tar.extractall(scratch, filter="data")
    for name, rows in (("providers/retaindb/queue.db", 50), ("providers/hindsight/store.data", 70)):
        with sqlite3.connect(scratch / name) as db:
            assert db.execute("SELECT count(*) FROM items").fetchone() == (rows,), name
        db.close()
    assert (scratch / "providers/notes.db").read_text() == "not a database, copied as it is"


def _damaged_database(path: Path) -> None:
    """A database with a valid header whose table pages are overwritten with garbage."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, body TEXT)")
        db.executemany("INSERT INTO items (body) VALUES (?)", [("x" * 300,)] * 200)
    db.close()
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page * 2 : page * 2 + 600] = b"\xa5" * 600
    path.write_bytes(bytes(data))


def test_verify_and_check_refuse_a_damaged_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories/MEMORY.md").write_text("notes")
    _damaged_database(home / FACTS)
    made = chorus("backup", str(tmp_path / "verified"), "--verify", home=home)
    assert made.returncode != 0
    assert "is damaged" in made.stderr and FACTS.as_posix() in made.stderr

    archive = write_backup(home, tmp_path / "plain.tar.gz").path
    checked = chorus("restore", "--check", str(archive), home=tmp_path / "never")
    assert checked.returncode != 0
    assert "is damaged" in checked.stderr and FACTS.as_posix() in checked.stderr
    assert not (tmp_path / "never").exists()  # checked, nothing restored

    (home / FACTS).unlink()
    whole = write_backup(home, tmp_path / "whole.tar.gz").path
    fine = chorus("restore", "--check", str(whole), home=tmp_path / "never")
    assert fine.returncode == 0, fine.stderr
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(whole.read_bytes()[:-40])
    cut = chorus("restore", "--check", str(truncated), home=tmp_path / "never")
    assert cut.returncode != 0 and "error:" in cut.stderr


def test_keep_n_prunes_only_the_oldest_chorus_backups(tmp_path: Path) -> None:
    home, backups = tmp_path / "home", tmp_path / "backups"
    (home / "memories").mkdir(parents=True)
    (home / "memories/MEMORY.md").write_text("notes")
    dated = [write_backup(home, backups, now=1_000_000 + day * 86_400).path for day in range(4)]
    mine = write_backup(home, backups / "before-upgrade.tar.gz").path
    impostor = backups / "chorus-backup-19990101-000000.tar.gz"  # the name, not a backup
    impostor.write_bytes(b"holiday photos")
    other = backups / "notes.txt"
    other.write_text("keep me")

    made = chorus("backup", str(backups), "--keep", "2", home=home)
    assert made.returncode == 0, made.stderr
    left = set(backups.iterdir())
    newest = left - {dated[-1], mine, impostor, other}
    assert len(newest) == 1 and next(iter(newest)).name.startswith("chorus-backup-")
    assert left == {*newest, dated[-1], mine, impostor, other}
    refused = chorus("backup", str(backups), "--keep", "0", home=home)
    assert refused.returncode != 0 and "--keep" in refused.stderr


def test_no_backup_is_ever_inside_a_later_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories/MEMORY.md").write_text("notes")
    own_name = write_backup(home, home / "archives/nightly.tar.gz").path  # a name of one's own
    moved = home / "memories/old.tgz"
    write_backup(home, tmp_path / "x.tar.gz").path.rename(moved)  # a backup moved into the home
    (home / "backups").mkdir()
    (home / "backups/README.txt").write_text("the destination directory")
    later = write_backup(home, home / "backups", now=2_000_000).path
    beside = write_backup(home, tmp_path, now=3_000_000).path  # the home's parent

    with tarfile.open(later) as tar:
        assert set(tar.getnames()) == {"memories/MEMORY.md", MANIFEST}
    with tarfile.open(beside) as tar:  # another destination: only the archives are left out
        assert set(tar.getnames()) == {"memories/MEMORY.md", "backups/README.txt", MANIFEST}
    with tarfile.open(own_name) as tar:
        assert set(tar.getnames()) == {"memories/MEMORY.md", MANIFEST}
    assert moved.exists() and later.exists()
    # an archive that is not chorus's is data, and is kept
    with tarfile.open(home / "memories/photos.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("photo.jpg")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"jpg"))
    with tarfile.open(write_backup(home, tmp_path / "last.tar.gz").path) as tar:
        assert "memories/photos.tar.gz" in tar.getnames()
    # an archive named as a file: only it is left out, not the rest of its directory
    snapshot = write_backup(home, home / "memories/snapshot.tar.gz").path
    with tarfile.open(snapshot) as tar:
        assert {"memories/MEMORY.md", "memories/photos.tar.gz"} <= set(tar.getnames())

"""Components on one SQLite file share one connection per process, each at its durability."""

from __future__ import annotations

import os
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gateway.access import GatewayDB
from gateway.sessions import Inbox
from memory.errors import SessionDBError
from memory.jobs._state import JobState
from memory.people import PeopleStore
from memory.store._staged import StagedWrites
from memory.transcripts import SessionDB


def open_files(path: Path) -> int:
    """How many of this process's file descriptors point at ``path``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path.resolve()):
                count += 1
        except OSError:
            continue
    return count


def test_every_component_on_state_db_uses_one_connection(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    parts = [SessionDB(path), GatewayDB(path), Inbox(path), StagedWrites(path), JobState(path)]
    try:
        assert open_files(path) == 1
        assert len({id(part._conn) for part in parts}) == 1
    finally:
        for part in parts:
            part.close()
    assert open_files(path) == 0  # the last one out closed it


def test_closing_one_component_leaves_the_others_working(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db, inbox = SessionDB(path), Inbox(path)
    inbox.close()
    inbox.close()  # twice is harmless
    with pytest.raises(Exception, match="closed"):
        inbox.pending("telegram")
    db.create_session("s1", platform="telegram", user_key="telegram:1")
    assert db.get_session("s1") is not None
    again = Inbox(path)  # a new one on the same file: tables already there
    assert again.take("telegram", "r1", "{}")
    again.close()
    db.close()
    with pytest.raises(SessionDBError):
        db.get_session("s1")


def test_each_component_commits_at_its_own_synchronous_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript write commits at NORMAL; an inbox record (FULL) commits, then syncs the
    WAL file before it returns — after letting the lock go, so the other components of
    the process write on while the disk takes it."""
    path = tmp_path / "state.db"
    db, inbox = SessionDB(path), Inbox(path)
    syncing, synced = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_disk(fd: int) -> None:  # the disk: the WAL's sync waits until told
        if os.readlink(f"/proc/self/fd/{fd}") == str(path.resolve()) + "-wal":
            syncing.set()
            assert synced.wait(10)
        real_fsync(fd)

    try:
        db.create_session("s1", platform="telegram", user_key="telegram:1")
        assert db._conn is not None
        assert db._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        monkeypatch.setattr(os, "fsync", slow_disk)
        record = threading.Thread(target=inbox.take, args=("telegram", "r1", "{}"))
        record.start()
        assert syncing.wait(10), "the inbox record never synced the WAL"
        db.append_message("s1", "user", "hello")  # meanwhile: the lock is free
        assert [m.content for m in db.get_messages("s1")] == ["hello"]
        assert record.is_alive()  # the record has not returned before the disk took it
        synced.set()
        record.join(10)
        assert not record.is_alive()
        assert [row.receipt for row in inbox.pending("telegram")] == ["r1"]
    finally:
        synced.set()
        inbox.close()
        db.close()


def test_writers_of_different_components_in_many_threads_all_land(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db, inbox = SessionDB(path), Inbox(path)
    db.create_session("s1", platform="telegram", user_key="telegram:1")
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def write(n: int) -> None:
        start.wait()
        try:
            for i in range(100):
                if n % 2:
                    inbox.take("telegram", f"{n}-{i}", "{}")
                else:
                    db.append_message("s1", "user", f"message {n}-{i}")
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        assert len(db.get_messages("s1")) == 400
        assert len(inbox.pending("telegram")) == 400
    finally:
        inbox.close()
        db.close()


def test_another_process_still_meets_the_busy_timeout_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db.create_session("s1", platform="telegram", user_key="telegram:1")
    other = sqlite3.connect(path, isolation_level=None, timeout=5)
    other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock a moment
    done = threading.Event()

    def append() -> None:
        db.append_message("s1", "user", "waits, then lands")
        done.set()

    thread = threading.Thread(target=append)
    thread.start()
    assert not done.wait(0.2)
    other.execute("COMMIT")
    thread.join(10)
    assert done.is_set()
    assert [m.content for m in db.get_messages("s1")] == ["waits, then lands"]
    other.close()
    db.close()


def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db.create_session("s1", platform="telegram", user_key="telegram:1")
    pid = os.fork()
    if pid == 0:  # the child: a new component must not reuse the parent's connection
        code = 1
        try:
            child = SessionDB(path)
            code = 0 if child._conn is not db._conn else 3
            child.append_message("s1", "user", "from the child")
            child.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert [m.content for m in db.get_messages("s1")] == ["from the child"]
    db.close()


ACCESS_ROW = 'INSERT INTO user_access (user_key, state, "by", at) VALUES (?, ?, ?, ?)'


def test_a_hot_read_does_not_wait_for_a_writer_of_the_process(tmp_path: Path) -> None:
    """The reads every message makes (whose person an account is, whether they are
    allowed) go on while another thread of the process holds the shared connection in a
    write: they see what was committed, not what that write has not."""
    path = tmp_path / "state.db"
    people, gateway = PeopleStore(path), GatewayDB(path)
    inside, done = threading.Event(), threading.Event()

    def write() -> None:
        with gateway._locked(write=True) as conn:
            conn.execute(ACCESS_ROW, ("telegram:9", "allowed", "telegram:1", 1.0))
            inside.set()
            done.wait(30)

    try:
        person = people.link("telegram:1", "discord:2", "telegram:1", 1.0).person
        writer = threading.Thread(target=write)
        writer.start()
        assert inside.wait(10)
        with ThreadPoolExecutor(max_workers=1) as pool:
            try:
                assert pool.submit(people.person_of, "discord:2").result(timeout=5) == person
                assert pool.submit(gateway.get_access, "telegram:9").result(timeout=5) is None
            finally:
                done.set()
                writer.join()
        found = gateway.get_access("telegram:9")
        assert found is not None and found.state == "allowed"
    finally:
        done.set()
        people.close()
        gateway.close()


def test_a_read_inside_a_write_of_its_thread_sees_that_write(tmp_path: Path) -> None:
    gateway = GatewayDB(path := tmp_path / "state.db")
    try:
        with gateway._locked(write=True) as conn:
            conn.execute(ACCESS_ROW, ("telegram:9", "denied", "telegram:1", 1.0))
            found = gateway.get_access("telegram:9")
            assert found is not None and found.state == "denied"
        assert open_files(path) == 1  # no second connection was needed for it
    finally:
        gateway.close()

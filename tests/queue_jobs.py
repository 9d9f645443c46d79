"""Job functions the queue tests enqueue by dotted path (``tests.queue_jobs.<name>``).

They run in the test process (in-process queue) or in worker processes, so they
take plain arguments and leave their traces in files: every run appends one
JSON line ``{"session", "n", "pid", "ppid", "key"}`` to a record file, under an
``fcntl`` lock with ``O_APPEND`` so concurrent workers never interleave lines.
``pid`` is the worker that ran the job (workers never fork per job).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RELEASE_TIMEOUT = 30.0
"""Longest a blocked job waits for its release file."""


@contextmanager
def _locked(path: str) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _line(session_id: str, n: int, key: str) -> bytes:
    entry = {"session": session_id, "n": n, "pid": os.getpid(), "ppid": os.getppid(), "key": key}
    return (json.dumps(entry) + "\n").encode()


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every line recorded so far, in file order (a line still being written is left out)."""
    p = Path(path)
    if not p.exists():
        return []
    whole = p.read_text().rpartition("\n")[0]
    return [json.loads(line) for line in whole.splitlines() if line.strip()]


def record(path: str, session_id: str, n: int, delay: float = 0.0) -> None:
    """Append one record (not idempotent: running it twice records twice)."""
    if delay:
        time.sleep(delay)
    with _locked(path) as fd:
        os.write(fd, _line(session_id, n, f"{session_id}:{n}"))


def record_once(path: str, key: str, session_id: str, n: int) -> None:
    """Append one record unless ``key`` was recorded already: the idempotent version."""
    with _locked(path) as fd:
        if any(r.get("key") == key for r in read_records(path)):
            return
        os.write(fd, _line(session_id, n, key))


def fail_times(path: str, key: str, times: int, session_id: str = "", n: int = 0) -> None:
    """Raise on the first ``times`` runs (counted in ``<path>.<key>.count``), then record."""
    counter = f"{path}.{key}.count"
    with _locked(counter) as fd:
        os.lseek(fd, 0, os.SEEK_SET)
        runs = int(os.read(fd, 64) or b"0") + 1
        os.ftruncate(fd, 0)
        os.write(fd, str(runs).encode())
    if runs <= times:
        raise RuntimeError(f"planned failure {runs} of {times}")
    with _locked(path) as fd:
        os.write(fd, _line(session_id or key, n, key))


def runs_of(path: str | Path, key: str) -> int:
    """How many times ``fail_times`` ran for ``key``."""
    counter = Path(f"{path}.{key}.count")
    return int(counter.read_text() or "0") if counter.exists() else 0


def block_then_record(path: str, marker: str, n: int) -> None:
    """Write ``marker`` (holding this pid), wait for ``<marker>.release``, then record."""
    Path(marker).write_text(str(os.getpid()))
    release = Path(f"{marker}.release")
    deadline = time.monotonic() + RELEASE_TIMEOUT
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{release} did not appear")
        time.sleep(0.02)
    record(path, "blocked", n)


def block_then_mark(path: str, marker: str, db: str, key: str, n: int) -> None:
    """Like ``block_then_record``, then mark ``key`` done in the ``JobState`` in ``db``
    and record only if that mark was this run's (a run whose lease moved on raises)."""
    from memory.jobs import JobState

    Path(marker).write_text(str(os.getpid()))
    release = Path(f"{marker}.release")
    deadline = time.monotonic() + RELEASE_TIMEOUT
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{release} did not appear")
        time.sleep(0.02)
    state = JobState(Path(db))
    try:
        if state.mark_done(key):
            record(path, "blocked", n)
    finally:
        state.close()

"""Which chorus processes run on a CHORUS_HOME: a lock file they hold while they run.

``chorus gateway`` and ``chorus worker`` hold a shared ``flock`` on
``CHORUS_HOME/running.lock`` for as long as they run (the kernel lets go of it
when the process ends, however it ends). A command that must not run beside
them (``chorus migrate-db``, which copies the database: whatever they wrote
after the copy would stay behind) tries to take the lock exclusively and is
refused while any of them holds it.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

logger = logging.getLogger(__name__)

LOCK_NAME = "running.lock"


def lock_path(home: Path) -> Path:
    return home / LOCK_NAME


@contextmanager
def running(home: Path) -> Iterator[None]:
    """Mark this process as running on ``home`` until the block ends."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(lock_path(home), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # lets go of the lock


@contextmanager
def alone(home: Path) -> Iterator[str | None]:
    """Hold ``home``'s lock exclusively for the block; yields None when it is held,
    else who runs on ``home`` ("pid 123, 456" or "a process") and holds nothing."""
    path = lock_path(home)
    if not home.is_dir():
        yield None
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pids = holders(path)
            yield f"pid {', '.join(map(str, pids))}" if pids else "a process"
            return
        yield None
    finally:
        os.close(fd)


def holders(path: Path) -> list[int]:
    """The pids holding a flock on ``path`` as /proc/locks tells (empty where it does not)."""
    try:
        inode = path.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids: set[int] = set()
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a process waiting for the lock, not holding it
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(f":{inode}"):
            try:
                pids.add(int(fields[4]))
            except ValueError:
                logger.debug("unreadable line in /proc/locks: %r", line)
    return sorted(pids)

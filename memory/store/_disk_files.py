"""The memory files as plain files on this machine's disk.

A write re-reads the file under an exclusive lock on ``<file>.lock`` (the file
itself gets replaced), applies the change, writes a temp file, fsyncs it and
renames it over the file, so writers in other processes never lose each other's
entries and readers never see a half-written file.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from memory.errors import MemoryStoreError
from memory.store._files import ENTRY_DELIMITER, Change, parse_entries
from memory.store._withheld import MEMORY_FILE_NAMES

logger = logging.getLogger(__name__)

_TMP_PREFIX = ".mem_"
_TMP_SUFFIX = ".tmp"


def _read_entries(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return parse_entries(handle.read())
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryStoreError(f"cannot read memory file {path}") from exc


def _ensure_dir(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each with mode 0700."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<path>.lock`` (the data file itself gets replaced)."""
    _ensure_dir(path.parent)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _tmp_prefix(path: Path) -> str:
    # Temp names carry the data file's name so that cleaning up after a killed
    # writer of this file never touches a live temp of another file's writer.
    return f"{_TMP_PREFIX}{path.name}."


def _remove_stale_temps(path: Path) -> None:
    """Delete temps a killed writer left behind; call only while holding the lock."""
    for stale in path.parent.glob(_tmp_prefix(path) + "*" + _TMP_SUFFIX):
        logger.warning("removing stale memory temp file %s", stale)
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()


def _write_entries(path: Path, entries: list[str]) -> None:
    """Atomically replace ``path`` with ``entries`` (temp file, fsync, rename, fsync dir)."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=_tmp_prefix(path), suffix=_TMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(ENTRY_DELIMITER.join(entries))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


class DiskMemoryFiles:
    """The memory files as plain files: flock on ``<file>.lock``, temp file, fsync, rename."""

    def read(self, path: Path) -> list[str]:
        return _read_entries(path)

    def edit(self, path: Path, change: Change) -> list[str]:
        with _file_lock(path):
            _remove_stale_temps(path)
            current = _read_entries(path)
            new = change(current)
            if new is None:
                return current
            _write_entries(path, new)
            return new

    def paths(self, root: Path) -> list[Path]:
        found = (p for name in MEMORY_FILE_NAMES for p in root.rglob(name) if p.is_file())
        return sorted(found)

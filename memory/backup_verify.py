"""Checking a backup archive without restoring it, and keeping only the newest backups.

``verify_backup`` reads every member of an archive ``memory.backup`` wrote:
each size must match the manifest, and each SQLite database (the members the
manifest names, and any other with the SQLite header) is unpacked into a
scratch directory and must pass ``PRAGMA integrity_check`` (``quick_check``
for databases above ``QUICK_CHECK_ABOVE`` bytes). Any problem is a
``BackupError`` naming the members at fault.

``prune_backups`` removes, after a backup was written, the oldest archives in
its directory beyond the newest ``keep``: only files named as ``chorus
backup`` names them (``chorus-backup-<UTC time>.tar.gz``) that hold a chorus
manifest, never anything else.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memory.backup import (
    DEFAULT_NAME,
    MANIFEST,
    SQLITE_HEADER,
    BackupError,
    is_chorus_archive,
    read_manifest,
)

logger = logging.getLogger(__name__)

QUICK_CHECK_ABOVE = 1 << 30
"""Databases larger than this (bytes) get ``PRAGMA quick_check``, not the full check."""
PROBLEMS_SHOWN = 5


@dataclass(frozen=True)
class VerifyReport:
    path: Path
    files: int
    """Members checked besides the manifest."""
    databases: int
    """SQLite databases among them, each of which passed its integrity check."""


def _check_database(path: Path) -> str | None:
    """None when the database at ``path`` is whole; else what is wrong with it."""
    pragma = "quick_check" if path.stat().st_size > QUICK_CHECK_ABOVE else "integrity_check"
    try:
        connection = sqlite3.connect(path)
        try:
            rows = connection.execute(f"PRAGMA {pragma}").fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return str(exc)
    found = [str(row[0]) for row in rows]
    return None if found == ["ok"] else "; ".join(found[:3])


def _scratch_dir(archive_path: Path) -> tempfile.TemporaryDirectory[str]:
    """Beside the archive (``/tmp`` is often a small tmpfs), else in the temp directory."""
    try:
        return tempfile.TemporaryDirectory(prefix="chorus-verify-", dir=archive_path.parent)
    except OSError:
        return tempfile.TemporaryDirectory(prefix="chorus-verify-")


def verify_backup(archive_path: Path) -> VerifyReport:
    """Check every member of ``archive_path``; ``BackupError`` lists what is damaged."""
    manifest = read_manifest(archive_path)
    sizes = manifest.get("sizes")
    sizes = sizes if isinstance(sizes, dict) else {}
    listed = manifest.get("databases")
    expected = (
        {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    )
    problems: list[str] = []
    files = databases = 0
    try:
        with tarfile.open(archive_path, "r:gz") as archive, _scratch_dir(archive_path) as scratch:
            for member in archive:
                if member.name == MANIFEST or not member.isfile():
                    continue
                files += 1
                if member.name in sizes and sizes[member.name] != member.size:
                    problems.append(
                        f"{member.name}: {member.size} bytes, "
                        f"the manifest says {sizes[member.name]}"
                    )
                source = archive.extractfile(member)
                if source is None:
                    continue
                head = source.read(len(SQLITE_HEADER))
                if member.name not in expected and head != SQLITE_HEADER:
                    continue
                expected.discard(member.name)
                copy = Path(scratch) / "check.db"
                with copy.open("wb") as out:
                    out.write(head)
                    shutil.copyfileobj(source, out)
                wrong = _check_database(copy)
                for side in ("", "-wal", "-shm"):
                    copy.with_name(copy.name + side).unlink(missing_ok=True)
                databases += 1
                if wrong is not None:
                    problems.append(f"{member.name}: {wrong}")
    except (OSError, EOFError, tarfile.TarError) as exc:
        problems.append(f"the archive cannot be read to its end ({exc})")
    problems += [f"{name}: named in the manifest but missing" for name in sorted(expected)]
    if problems:
        logger.warning("backup %s failed its check: %s", archive_path, "; ".join(problems))
        more = len(problems) - PROBLEMS_SHOWN
        shown = "; ".join(problems[:PROBLEMS_SHOWN]) + (f"; and {more} more" if more > 0 else "")
        raise BackupError(f"{archive_path} is damaged: {shown}")
    return VerifyReport(archive_path, files, databases)


def prune_backups(written: Path, keep: int) -> list[Path]:
    """Keep ``written`` and the newest ``keep - 1`` other chorus backups beside it;
    remove the older ones and return them."""
    if keep < 1:
        raise BackupError(f"--keep must be 1 or more, not {keep}")
    others = sorted(
        (
            path
            for path in written.parent.iterdir()
            if path != written and DEFAULT_NAME.fullmatch(path.name) and is_chorus_archive(path)
        ),
        key=lambda path: path.name,  # the name holds the UTC time it was made
        reverse=True,
    )
    removed: list[Path] = []
    for old in others[keep - 1 :]:
        try:
            old.unlink()
        except OSError as exc:
            raise BackupError(f"could not remove the old backup {old}: {exc}") from exc
        logger.info("removed the old backup %s (keeping %d)", old, keep)
        removed.append(old)
    return removed

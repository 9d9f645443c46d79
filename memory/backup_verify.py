"""Checking a backup archive without restoring it, and keeping only the newest backups.

``verify_backup`` reads every member of an archive ``memory.backup`` wrote:
each size must match the manifest, and each SQLite database (the members the
manifest names, and any other with the SQLite header) is unpacked into a
scratch directory and must pass ``PRAGMA integrity_check`` (``quick_check``
for databases above ``QUICK_CHECK_ABOVE`` bytes). The rows of PostgreSQL
tables (``postgresql/…``, ``memory.backup_pg``) are read to their end: each
table's member must be there, hold as many rows as the manifest lists, each
row with as many fields as the table has columns. Any problem is a
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memory.backup import (
    DEFAULT_NAME,
    MANIFEST,
    SQLITE_HEADER,
    BackupError,
    is_chorus_archive,
    read_manifest,
)
from memory.backup_pg import DumpError, dump_tables
from memory.database import TableRows

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
    tables: int = 0
    """PostgreSQL tables among them, each with the rows and columns its manifest lists."""
    rows: int = 0


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


def _check_rows(source: IO[bytes], columns: int, rows: int) -> str | None:
    """None when ``source`` holds ``rows`` COPY rows of ``columns`` fields each."""
    found = 0
    rest = b""
    while block := source.read(1 << 16):
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        for line in lines:
            found += 1
            fields = line.count(b"\t") + 1
            if fields != columns:
                return f"row {found} has {fields} fields, the table {columns}"
    if rest:
        return "the last row is cut short"
    return None if found == rows else f"{found} rows, the manifest says {rows}"


@dataclass
class _Check:
    """What ``verify_backup`` expects of an archive's members, and what it found."""

    sizes: dict[str, object]
    databases_listed: set[str]
    tables_listed: dict[str, TableRows]
    scratch: Path = Path()
    problems: list[str] = field(default_factory=list)
    files: int = 0
    databases: int = 0
    tables: int = 0
    rows: int = 0

    def member(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        self.files += 1
        declared = self.sizes.get(member.name)
        if declared is not None and declared != member.size:
            self.problems.append(
                f"{member.name}: {member.size} bytes, the manifest says {declared}"
            )
        source = archive.extractfile(member)
        if source is None:
            return
        table = self.tables_listed.pop(member.name, None)
        if table is not None:
            wrong = _check_rows(source, len(table.columns), table.rows)
            if wrong is not None:
                self.problems.append(f"{member.name} (table {table.name}): {wrong}")
            self.tables, self.rows = self.tables + 1, self.rows + table.rows
            return
        head = source.read(len(SQLITE_HEADER))
        if member.name not in self.databases_listed and head != SQLITE_HEADER:
            return
        self.databases_listed.discard(member.name)
        copy = self.scratch / "check.db"
        with copy.open("wb") as out:
            out.write(head)
            shutil.copyfileobj(source, out)
        wrong = _check_database(copy)
        for side in ("", "-wal", "-shm"):
            copy.with_name(copy.name + side).unlink(missing_ok=True)
        self.databases += 1
        if wrong is not None:
            self.problems.append(f"{member.name}: {wrong}")

    def missing(self) -> list[str]:
        gone = [f"{name}: named in the manifest but missing" for name in self.databases_listed]
        gone += [
            f"{name} (table {table.name}): named in the manifest but missing"
            for name, table in self.tables_listed.items()
        ]
        return sorted(gone)


def verify_backup(archive_path: Path) -> VerifyReport:
    """Check every member of ``archive_path``; ``BackupError`` lists what is damaged."""
    manifest = read_manifest(archive_path)
    try:
        tables = {member: table for table, member in dump_tables(manifest) or ()}
    except DumpError as exc:
        raise BackupError(f"{archive_path} is damaged: {exc}") from None
    sizes = manifest.get("sizes")
    listed = manifest.get("databases")
    expected = (
        {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    )
    check = _Check(sizes if isinstance(sizes, dict) else {}, expected, tables)
    problems = check.problems
    try:
        with tarfile.open(archive_path, "r:gz") as archive, _scratch_dir(archive_path) as scratch:
            check.scratch = Path(scratch)
            for member in archive:
                if member.name != MANIFEST and member.isfile():
                    check.member(archive, member)
    except (OSError, EOFError, tarfile.TarError) as exc:
        problems.append(f"the archive cannot be read to its end ({exc})")
    problems += check.missing()
    if problems:
        logger.warning("backup %s failed its check: %s", archive_path, "; ".join(problems))
        more = len(problems) - PROBLEMS_SHOWN
        shown = "; ".join(problems[:PROBLEMS_SHOWN]) + (f"; and {more} more" if more > 0 else "")
        raise BackupError(f"{archive_path} is damaged: {shown}")
    return VerifyReport(archive_path, check.files, check.databases, check.tables, check.rows)


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

"""Restoring a backup archive (``memory.backup``) into an empty home, and its database.

``restore_backup`` unpacks an archive into a home that is empty or missing
(``force`` overwrites a non-empty one) and leaves directories 0700 and files
0600, as chorus makes them. It restores the data — memories, ``state.db``,
providers' data — and ``config.yaml`` or ``plugins/`` only when named; every
member is checked first (``memory.backup_members``), so a tampered archive is
refused before anything is written.

With ``where`` a PostgreSQL URL: a backup holding PostgreSQL tables
(``memory.backup_pg``) is loaded into that database, which must hold no rows
yet, before the files are unpacked; a backup without them (made on SQLite)
writes its memory files into PostgreSQL. Without a URL the tables of a
PostgreSQL backup are left out (and named), its memory files go onto the disk.
"""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memory.backup import (
    MANIFEST,
    BackupError,
    BackupSummary,
    is_memory_file,
    open_memory_files,
    read_manifest,
)
from memory.backup_members import MemberRefused, check_includes, plan_restore
from memory.backup_pg import DumpError, check_empty, check_versions, dump_members, restore_database
from memory.database import Location, is_postgres
from memory.errors import MemoryLayerError
from memory.store import PostgresMemoryFiles
from memory.transcripts import SCHEMA_VERSION

__all__ = ["restore_backup"]

logger = logging.getLogger(__name__)


def restore_backup(
    archive_path: Path,
    home: Path,
    *,
    force: bool = False,
    where: Location | None = None,
    include: frozenset[str] = frozenset(),
    prepare_tables: Callable[[str], None] | None = None,
) -> BackupSummary:
    """Unpack ``archive_path`` into ``home``; refuses a non-empty home unless ``force``.

    ``include`` names what is restored besides the data: ``config.yaml``,
    ``plugins``. With ``where`` a PostgreSQL URL the memory files go into
    PostgreSQL, which must hold none yet (unless ``force``); everything else
    goes onto the disk. A backup holding PostgreSQL tables restores them into
    ``where``, which must hold no rows at all (``force`` or not), after
    ``prepare_tables(url)`` made the tables of the components besides the
    transcripts (the caller knows them all); without a URL they are left out.
    """
    try:
        check_includes(include)
    except MemberRefused as exc:
        raise BackupError(str(exc)) from None
    manifest = read_manifest(archive_path)
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise BackupError(
            f"the backup has schema version {version}, newer than this chorus "
            f"({SCHEMA_VERSION}); restore it with the chorus that made it or a newer one"
        )
    if home.exists() and any(home.iterdir()) and not force:
        raise BackupError(f"CHORUS_HOME {home} is not empty; restore into an empty one or --force")
    try:
        tables = dump_members(manifest)
        into = str(where) if tables and where is not None and is_postgres(where) else None
        if into is not None:
            check_versions(manifest)
            check_empty(into)
    except DumpError as exc:
        raise BackupError(str(exc)) from None
    target = _Target(None if into is not None else open_memory_files(where, home), into)
    target.prepare_tables = prepare_tables
    pg_files = target.pg_files
    try:
        if pg_files is not None and not force and any(text for _, text in pg_files.all_files()):
            raise BackupError(
                "PostgreSQL (database.url) holds memory files already; "
                "restore into an empty database or --force"
            )
        files, left_out = _unpack(archive_path, home, target, manifest, include)
    except BackupError:
        raise
    except MemoryLayerError as exc:  # PostgreSQL refused a read or a write
        raise BackupError(f"restore failed: {exc}") from exc
    finally:
        if pg_files is not None:
            pg_files.close()
    if into is not None:
        left_out = tuple(name for name in left_out if name not in tables)
    return BackupSummary(
        archive_path, files, version, left_out, tables=len(tables) if into else 0, rows=target.rows
    )


@dataclass
class _Target:
    """Where a restore writes besides the home: memory files into PostgreSQL
    (``pg_files``), or every table into the database at ``url``."""

    pg_files: PostgresMemoryFiles | None
    url: str | None
    prepare_tables: Callable[[str], None] | None = None
    rows: int = 0


def _unpack(
    archive_path: Path,
    home: Path,
    target: _Target,
    manifest: dict[str, object],
    include: frozenset[str],
) -> tuple[int, tuple[str, ...]]:
    """Write the members ``plan_restore`` passes into ``home`` (memory files into
    ``target.pg_files`` if given, or the tables into ``target.url``); the count
    written and the names left out."""
    pg_files = target.pg_files
    files = 0
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            try:
                plan = plan_restore(
                    archive,
                    manifest,
                    manifest_name=MANIFEST,
                    archive_size=archive_path.stat().st_size,
                    home=home,
                    include=include,
                )
            except MemberRefused as exc:
                logger.warning("refused to restore %s: %s", archive_path, exc)
                raise BackupError(f"{archive_path} was not restored: {exc}") from None
            if target.url is not None:
                try:
                    target.rows = restore_database(
                        archive, target.url, manifest, target.prepare_tables
                    )
                except DumpError as exc:
                    raise BackupError(str(exc)) from None
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(home, 0o700)
            for member in plan.members:
                relative = PurePosixPath(member.name)
                if target.url is not None and is_memory_file(relative):
                    files += 1  # a row of memory_files, restored with the tables
                    continue
                source = archive.extractfile(member)
                if source is None:
                    continue
                if pg_files is not None and is_memory_file(relative):
                    name = PurePosixPath(*relative.parts[1:]).as_posix()
                    try:
                        text = source.read().decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise BackupError(f"{member.name} is not UTF-8 text") from exc
                    pg_files.write_text(name, text)
                    files += 1
                    continue
                destination = home.joinpath(*relative.parts)
                for parent in reversed(destination.relative_to(home).parents):
                    (home / parent).mkdir(mode=0o700, exist_ok=True)
                for side in ("-wal", "-shm"):  # a stale side file would corrupt the copy
                    destination.with_name(destination.name + side).unlink(missing_ok=True)
                fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(source, out)
                os.chmod(destination, 0o600)
                files += 1
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise BackupError(f"restore failed: {exc or 'the archive is cut short'}") from exc
    return files, tuple(plan.left_out)

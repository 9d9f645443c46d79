"""One-file backups of a CHORUS_HOME (restored by ``memory.backup_restore``).

``write_backup`` makes a ``.tar.gz`` holding a consistent copy of every SQLite
database of the home — ``state.db`` and the providers' (Holographic
``facts.db``, Hindsight ``hindsight.db``, …), found by their header, not their
name — made with SQLite's online backup API (safe while the gateway and workers
write to them; what sits in a WAL is folded in), and every other file of the
home — memories (``MEMORY.md``, each ``USER.md``), ``config.yaml``, plugins —
except the secrets file ``.env`` (secrets belong in a secret store, not in
every backup), the SQLite side files (``-wal``, ``-shm``, ``-journal``), whose
content the copies already hold, and backups: the directory the archive is
put in (when named as a directory) and every chorus archive, whatever its name,
so a backup kept in the home is never inside a later one. A ``chorus-backup.json`` manifest names
the schema version of the archived ``state.db`` (as it is, not this chorus's), when
the backup was made and which members are databases.

With ``database.url`` set (``where`` a ``postgresql://`` URL) the memory files
live in PostgreSQL (``memory.store.PostgresMemoryFiles``); the archive holds
them at the same paths (``memories/MEMORY.md``, ``memories/users/…/USER.md``)
as if they came from disk, so a backup of either kind restores into either: a
restore with a URL writes them into PostgreSQL, one without onto the disk.
Every table of the database is in the archive too, as of one instant
(``memory.backup_pg``): a restore with a URL loads them into an empty
PostgreSQL database; one without leaves them out and says so.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sqlite3
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memory.backup_pg import (
    DumpError,
    add_database,
)
from memory.database import Location, is_postgres
from memory.errors import MemoryLayerError
from memory.paths import ChorusPaths
from memory.store import PostgresMemoryFiles
from memory.transcripts import sqlite_schema_version

logger = logging.getLogger(__name__)

MANIFEST = "chorus-backup.json"
SKIPPED_NAMES = frozenset({".env"})
SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal", ".bak", ".tmp", ".partial")
SQLITE_HEADER = b"SQLite format 3\x00"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
DEFAULT_NAME = re.compile(r"chorus-backup-\d{8}-\d{6}\.tar\.gz")
"""The names ``default_name`` gives; ``--keep`` prunes only archives so named."""


class BackupError(MemoryLayerError):
    """A backup could not be written or restored; the message says why."""


@dataclass(frozen=True)
class BackupSummary:
    path: Path
    files: int
    """Files in the archive besides the manifest (``state.db`` included)."""
    schema_version: int
    left_out: tuple[str, ...] = ()
    """Members of the archive a restore did not write (``config.yaml`` unless named, …)."""
    tables: int = 0
    """PostgreSQL tables archived or restored (``database.url``)."""
    rows: int = 0
    """Their rows."""


def default_name(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"chorus-backup-{stamp}.tar.gz"


def is_memory_file(relative: PurePosixPath) -> bool:
    """A curated memory file (MEMORY.md, a USER.md): on disk, or a row with ``database.url``."""
    return len(relative.parts) > 1 and relative.parts[0] == "memories" and relative.suffix == ".md"


def open_memory_files(where: Location | None, home: Path) -> PostgresMemoryFiles | None:
    if where is None or not is_postgres(where):
        return None
    try:
        return PostgresMemoryFiles(str(where), ChorusPaths(home).memories_dir)
    except MemoryLayerError as exc:
        raise BackupError(str(exc)) from exc


def _add_text(archive: tarfile.TarFile, name: str, data: bytes) -> int:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
    archive.addfile(info, io.BytesIO(data))
    return len(data)


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite database (by its 16-byte header, not its name)."""
    try:
        with path.open("rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def is_chorus_archive(path: Path) -> bool:
    """Whether ``path`` is an archive ``write_backup`` made (it holds the manifest)."""
    if not path.name.endswith(ARCHIVE_SUFFIXES) or not path.is_file():
        return False
    try:
        read_manifest(path)
    except BackupError:
        return False
    return True


def _skipped(path: Path, relative: PurePosixPath, home: Path, backups: Path | None) -> bool:
    """Whether ``path`` stays out of the archive; ``backups`` is the directory
    the archive was put in when it was named as a directory (not as a file)."""
    if relative.name in SKIPPED_NAMES or relative.name.endswith(SKIPPED_SUFFIXES):
        return True
    if any(part.startswith("chorus-backup-") for part in relative.parts):
        return True  # earlier backups kept inside the home, and this one's scratch copy
    in_home = backups is not None and backups != home and backups.is_relative_to(home)
    if in_home and backups is not None and path.is_relative_to(backups):
        return True  # the directory backups are written into, inside the home
    return is_chorus_archive(path)  # a backup, whatever its name


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy of the SQLite database ``source`` at ``target`` (online backup)."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _add_file(archive: tarfile.TarFile, path: Path, arcname: str, scratch: Path) -> int | None:
    """Add ``path`` as ``arcname``: an SQLite database as a copy made with the online
    backup API (returns the copy's chorus schema version, 0 for none), any other file
    as it is (None)."""
    if not is_sqlite(path):
        archive.add(path, arcname=arcname)
        return None
    copy = scratch / "copy.db"
    try:
        copy_database(path, copy)
        version = sqlite_schema_version(copy) or 0
    except sqlite3.Error as exc:
        raise BackupError(f"backup failed: {arcname}: {exc}") from exc
    archive.add(copy, arcname=arcname)
    copy.unlink()
    return version


def _add_home(
    archive: tarfile.TarFile,
    home: Path,
    scratch: Path,
    skip: Callable[[Path, PurePosixPath], bool],
    *,
    sizes: dict[str, int],
    databases: list[str],
) -> int:
    """Every file of ``home`` not skipped into ``archive`` (databases as online copies,
    noted in ``databases``); returns the schema version of ``state.db`` (0: none)."""
    version = 0
    for path in sorted(home.rglob("*")):
        relative = PurePosixPath(path.relative_to(home).as_posix())
        if not path.is_file() or path.is_symlink() or skip(path, relative):
            continue
        arcname = relative.as_posix()
        copied = _add_file(archive, path, arcname, scratch)
        if copied is not None:
            databases.append(arcname)
            if arcname == "state.db":
                version = copied
        sizes[arcname] = archive.getmembers()[-1].size
    return version


def write_backup(
    home: Path, target: Path, *, where: Location | None = None, now: float | None = None
) -> BackupSummary:
    """Archive ``home`` at ``target``: a ``.tar.gz``/``.tgz`` file, or else a directory
    (made if missing) to put ``chorus-backup-<UTC time>.tar.gz`` in.

    ``where`` is ``database_location(settings)``: with a PostgreSQL URL the
    memory files are read from PostgreSQL (disk copies under ``memories/`` are
    stale and left out) and every table of the database is archived as of one
    instant (``memory.backup_pg``).
    """
    if not home.is_dir():
        raise BackupError(f"CHORUS_HOME {home} does not exist")
    if target.is_dir() or not target.name.endswith((".tar.gz", ".tgz")):
        target.mkdir(mode=0o700, parents=True, exist_ok=True)  # a directory to put it in
        target = target / default_name(now)
        backups: Path | None = target.parent.resolve()
    else:
        backups = None
    if target.exists():
        raise BackupError(f"{target} exists already; name a new file")
    target.parent.mkdir(parents=True, exist_ok=True)
    home, target = home.resolve(), target.resolve()
    pg_rows: list[tuple[str, str]] | None = [] if where is not None and is_postgres(where) else None
    sizes: dict[str, int] = {}
    databases: list[str] = []
    version = 0  # the schema of the state.db archived (0: none), which a restore must know
    dump: dict[str, object] | None = None
    # copies of the databases are made beside the archive, not in /tmp (often a small tmpfs)
    with tempfile.TemporaryDirectory(prefix="chorus-backup-", dir=target.parent) as scratch:
        partial = target.with_name(target.name + ".partial")

        def skip(path: Path, relative: PurePosixPath) -> bool:
            if path == partial or _skipped(path, relative, home, backups):
                return True
            return pg_rows is not None and is_memory_file(relative)

        try:
            with tarfile.open(partial, "w:gz") as archive:
                version = _add_home(
                    archive, home, Path(scratch), skip, sizes=sizes, databases=databases
                )
                if pg_rows is not None:  # the tables and memory files of one instant
                    dump, pg_rows = add_database(archive, str(where), Path(scratch), sizes)
                for name, text in pg_rows or ():
                    arcname = f"memories/{name}"
                    sizes[arcname] = _add_text(archive, arcname, text.encode("utf-8"))
                manifest = {
                    "format": 1,
                    "backend": "sqlite" if dump is None else "postgresql",
                    "schema_version": version,
                    "created": time.strftime(
                        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now if now is not None else time.time())
                    ),
                    "files": len(sizes),
                    "sizes": sizes,
                    "databases": databases,
                    **({} if dump is None else {"postgresql": dump}),
                }
                _add_text(archive, MANIFEST, json.dumps(manifest, indent=2).encode())
            os.chmod(partial, 0o600)
            partial.replace(target)
        except BackupError:
            partial.unlink(missing_ok=True)
            raise
        except (OSError, sqlite3.Error, tarfile.TarError, DumpError) as exc:
            partial.unlink(missing_ok=True)
            raise BackupError(
                f"backup failed: {exc}" if not isinstance(exc, DumpError) else str(exc)
            ) from exc
    tables, rows = _counted(dump)
    return BackupSummary(target, len(sizes) - tables, version, tables=tables, rows=rows)


def _counted(dump: object) -> tuple[int, int]:
    """The tables and rows a manifest's ``postgresql`` entry lists."""
    tables = dump.get("tables") if isinstance(dump, dict) else None
    if not isinstance(tables, dict):
        return 0, 0
    rows = [one.get("rows") for one in tables.values() if isinstance(one, dict)]
    return len(tables), sum(r for r in rows if isinstance(r, int))


def read_manifest(archive_path: Path) -> dict[str, object]:
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            member = archive.extractfile(MANIFEST)
            if member is None:
                raise KeyError(MANIFEST)
            data = json.loads(member.read())
    except (OSError, EOFError, tarfile.TarError, KeyError, ValueError) as exc:
        raise BackupError(f"{archive_path} is not a chorus backup ({exc or 'cut short'})") from exc
    if not isinstance(data, dict):
        raise BackupError(f"{archive_path} is not a chorus backup (bad manifest)")
    return data

"""Chorus's PostgreSQL tables in a backup archive, and back into an empty database.

With ``database.url`` set, ``chorus backup`` reads every table of the
database's schema in one ``REPEATABLE READ`` read-only snapshot
(``memory.database.read_snapshot``) and puts each table's rows in the archive
as ``postgresql/<table>.copy``, in PostgreSQL's ``COPY`` text format. The
manifest's ``postgresql`` entry names, per table, its member, its columns, its
row count and the highest id each identity column had handed out, and the
schema version of each component (``chorus_schema``) as the database had it.

No PostgreSQL client tools are needed (the image has none, and a ``pg_dump``
older than the server refuses it); the archive holds data only, never SQL:
the restore creates the tables with chorus's own schema statements (the
transcripts at the backup's version, which the gateway migrates at its start
as it would any database), then loads the rows into them in one transaction,
into a database none of whose tables holds a row.
"""

from __future__ import annotations

import logging
import re
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from memory.database import (
    TableRows,
    close_pool,
    filled_tables,
    load_snapshot,
    lock_schema,
    open_pool,
    read_snapshot,
)
from memory.errors import MemoryLayerError
from memory.transcripts import PG_SCHEMA_VERSION, create_pg_schema

__all__ = [
    "DUMP_DIR",
    "DumpError",
    "add_database",
    "check_empty",
    "dump_members",
    "dump_tables",
    "restore_database",
]

logger = logging.getLogger(__name__)

DUMP_DIR = "postgresql"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,63}")
TRANSCRIPTS = "transcripts"


class DumpError(MemoryLayerError):
    """The PostgreSQL part of a backup could not be written, read or restored."""


def _member(index: int, table: str) -> str:
    return f"{DUMP_DIR}/{table if _PLAIN_NAME.fullmatch(table) else f'table-{index}'}.copy"


MEMORY_FILES = "memory_files"


def add_database(
    archive: tarfile.TarFile, url: str, scratch: Path, sizes: dict[str, int]
) -> tuple[dict[str, object], list[tuple[str, str]]]:
    """Every table of ``url`` as of one instant into ``archive`` (sizes noted in ``sizes``);
    the manifest's ``postgresql`` entry, and the memory files ``(name, text)`` as of the
    same instant, for the archive to hold as files as well."""
    tables: dict[str, object] = {}
    try:
        with read_snapshot(url) as snapshot:
            for index, table in enumerate(snapshot.tables):
                member = _member(index, table.name)
                copy = scratch / "table.copy"
                with copy.open("wb") as out:
                    snapshot.copy_out(table, out)
                archive.add(copy, arcname=member)
                sizes[member] = copy.stat().st_size
                copy.unlink()
                tables[table.name] = {
                    "member": member,
                    "columns": table.columns,
                    "rows": table.rows,
                    "identity": table.identity,
                }
            memory = snapshot.select(MEMORY_FILES, ["name", "content"])
            return {
                "server_version": snapshot.server_version,
                "isolation": "repeatable read",
                "schema_versions": snapshot.schema_versions,
                "tables": tables,
            }, [(str(name), str(text)) for name, text in memory]
    except MemoryLayerError as exc:
        raise DumpError(f"backup failed: {exc}") from exc


def dump_tables(manifest: Mapping[str, object]) -> list[tuple[TableRows, str]] | None:
    """The tables a manifest lists with their members; None for a backup without them."""
    entry = manifest.get(DUMP_DIR)
    if entry is None:
        return None
    tables = entry.get("tables") if isinstance(entry, dict) else None
    if not isinstance(tables, dict):
        raise DumpError("the backup's manifest lists its PostgreSQL tables wrongly")
    found: list[tuple[TableRows, str]] = []
    for name, one in tables.items():
        if not isinstance(one, dict):
            raise DumpError(f"the backup's manifest lists table {name!r} wrongly")
        member, columns = one.get("member"), one.get("columns")
        rows, identity = one.get("rows"), one.get("identity", {})
        if (
            not isinstance(member, str)
            or not member.startswith(f"{DUMP_DIR}/")
            or not isinstance(columns, list)
            or not all(isinstance(c, str) for c in columns)
            or not isinstance(rows, int)
            or rows < 0
            or not isinstance(identity, dict)
            or not all(isinstance(k, str) and isinstance(v, int) for k, v in identity.items())
        ):
            raise DumpError(f"the backup's manifest lists table {name!r} wrongly")
        found.append((TableRows(str(name), columns, rows, dict(identity)), member))
    return found


def dump_members(manifest: Mapping[str, object]) -> frozenset[str]:
    """The archive members holding table rows (empty for a backup without them)."""
    return frozenset(member for _, member in dump_tables(manifest) or ())


def schema_versions(manifest: Mapping[str, object]) -> dict[str, int]:
    entry = manifest.get(DUMP_DIR)
    versions = entry.get("schema_versions", {}) if isinstance(entry, dict) else {}
    if not isinstance(versions, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in versions.items()
    ):
        raise DumpError("the backup's manifest lists its schema versions wrongly")
    return versions


def check_versions(manifest: Mapping[str, object]) -> None:
    """Refuse a dump whose transcripts are newer than this chorus reads."""
    version = schema_versions(manifest).get(TRANSCRIPTS, 0)
    if version > PG_SCHEMA_VERSION:
        raise DumpError(
            f"the backup's PostgreSQL tables have schema version {version}, newer than this "
            f"chorus ({PG_SCHEMA_VERSION}); restore it with the chorus that made it or a newer one"
        )


def check_empty(url: str) -> None:
    """Refuse a database whose tables hold rows, before anything is written anywhere."""
    try:
        filled = filled_tables(url)
    except MemoryLayerError as exc:
        raise DumpError(f"restore failed: {exc}") from exc
    if filled:
        held = ", ".join(f"{name} ({rows} rows)" for name, rows in sorted(filled.items())[:5])
        logger.warning("restore refused: the PostgreSQL database holds rows (%s)", held)
        raise DumpError(
            f"PostgreSQL (database.url) is not empty: {held}; restore into an empty "
            "database (create a new one, or drop and recreate this one)"
        )


def _create_transcripts(url: str, version: int) -> None:
    """The transcript tables at ``version`` (the backup's), unless there at it or newer."""
    pool = open_pool(url, size=1)
    try:
        with pool.transaction() as conn:
            lock_schema(conn)
            create_pg_schema(conn, version)
    finally:
        close_pool(pool)


def restore_database(
    archive: tarfile.TarFile,
    url: str,
    manifest: Mapping[str, object],
    prepare_tables: Callable[[str], None] | None,
) -> int:
    """Create chorus's tables in ``url`` and load the backup's rows into them; the rows."""
    listed = dump_tables(manifest) or []
    sizes = manifest.get("sizes")
    members: dict[str, tarfile.TarInfo] = {}
    for table, member in listed:
        try:
            info = archive.getmember(member)
        except KeyError:
            raise DumpError(f"{member} (table {table.name}) is missing from the backup") from None
        declared = sizes.get(member) if isinstance(sizes, dict) else None
        if not info.isfile() or declared != info.size:
            raise DumpError(f"{member} is not what the backup's manifest says it is")
        members[table.name] = info

    def open_rows(table: TableRows) -> IO[bytes]:
        source = archive.extractfile(members[table.name])
        if source is None:
            raise DumpError(f"{members[table.name].name} cannot be read")
        return source

    try:
        check_versions(manifest)
        version = schema_versions(manifest).get(TRANSCRIPTS, 0)
        if version:
            _create_transcripts(url, version)
        if prepare_tables is not None:
            prepare_tables(url)
        return load_snapshot(url, [table for table, _ in listed], open_rows)
    except DumpError:
        raise
    except (MemoryLayerError, OSError, tarfile.TarError) as exc:
        raise DumpError(f"restore of the PostgreSQL tables failed (nothing loaded): {exc}") from exc

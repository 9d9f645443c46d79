"""``chorus migrate-db --to postgresql://…``: move a SQLite home into PostgreSQL.

Run it once, with the gateway and the workers stopped: it creates every
component's tables in the (empty) PostgreSQL database, copies the rows of
``CHORUS_HOME/state.db`` into them in one transaction, and copies MEMORY.md and
every USER.md into PostgreSQL. The SQLite file and the memory files are left
as they were (a way back). Then set ``database.url`` and start the gateway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from gateway.access import GatewayDB
from gateway.cli._common import fail, out, settings
from gateway.clock import SystemClock
from gateway.sessions import Inbox
from memory.database import copy_sqlite_to_postgres, is_postgres, safe_location
from memory.errors import DatabaseCopyError, MemoryLayerError
from memory.jobs import JobState, Outbox
from memory.paths import ChorusPaths
from memory.providers import ProviderHealth
from memory.store import PostgresMemoryFiles, StagedWrites
from memory.tables import Tables
from memory.transcripts import SessionDB

logger = logging.getLogger(__name__)

COMPONENTS: tuple[Callable[[str], Tables], ...] = (
    SessionDB,
    GatewayDB,
    lambda url: Inbox(url, SystemClock()),
    StagedWrites,
    JobState,
    Outbox,
    ProviderHealth,
)
"""Every component with tables in ``state.db``: opened on the URL, each creates its own."""


def migrate_db_command(
    to: Annotated[
        str,
        typer.Option("--to", help="postgresql://user:password@host:port/database (empty)"),
    ],
) -> None:
    """Copy CHORUS_HOME's database and memory files into an empty PostgreSQL database."""
    cfg = settings()
    if not is_postgres(to):
        raise fail("--to must be a postgresql:// URL")
    source = ChorusPaths(cfg.home).state_db
    target = safe_location(to)
    try:
        for open_component in COMPONENTS:
            open_component(to).close()
        copied = copy_sqlite_to_postgres(source, to)
        files = copy_memory_files(cfg.home, to)
    except MemoryLayerError as exc:
        raise fail(f"{exc} (nothing was changed in {source})") from None
    for one in copied:
        out.print(f"{one.table}: {one.rows} rows", markup=False)
    out.print(f"memory files: {files}", markup=False)
    out.print(
        f"Copied {source} into {target}. Set database.url (or DATABASE_URL) to it and "
        "start the gateway; the SQLite file is kept as it was.",
        markup=False,
    )


def copy_memory_files(home: Path, url: str) -> int:
    """Copy MEMORY.md and every USER.md into PostgreSQL; how many files were copied.

    A file PostgreSQL holds already (non-empty) is refused: nothing is overwritten.
    """
    memories = ChorusPaths(home).memories_dir
    files = sorted(memories.rglob("*.md")) if memories.exists() else []
    with PostgresMemoryFiles(url, memories) as target:
        taken = [name for name, text in target.all_files() if text.strip()]
        if taken:
            raise DatabaseCopyError(
                f"PostgreSQL already holds memory files ({', '.join(taken[:3])}…)"
            )
        for path in files:
            target.write_text(target.name_of(path), path.read_text(encoding="utf-8"))
    return len(files)

"""``chorus migrate-db --to postgresql://…``: move a SQLite home into PostgreSQL.

Run it once, with the gateway and the workers stopped (it refuses while one
runs on this CHORUS_HOME; the target may come from ``DATABASE_URL``): it creates every
component's tables in the (empty) PostgreSQL database, copies the rows of
``CHORUS_HOME/state.db`` into them in one transaction, and copies MEMORY.md and
every USER.md into PostgreSQL. The SQLite file and the memory files are left
as they were (a way back). Then set ``database.url`` and start the gateway.
"""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from gateway.access import GatewayDB
from gateway.cli._common import fail, out, settings
from gateway.cli._running import alone
from gateway.clock import SystemClock
from gateway.config import database_location
from gateway.sessions import Inbox
from memory.approvals import ApprovalStore
from memory.database import Location, copy_sqlite_to_postgres, is_postgres, safe_location
from memory.errors import DatabaseCopyError, MemoryLayerError
from memory.jobs import JobState, Outbox
from memory.paths import ChorusPaths
from memory.people import PeopleStore
from memory.preferences import PreferenceStore
from memory.providers import ProviderHealth
from memory.secrets import SecretStore
from memory.store import PostgresMemoryFiles, StagedWrites
from memory.tables import Tables
from memory.transcripts import SchemaState, SessionDB, inspect_schema

logger = logging.getLogger(__name__)

COMPONENTS: tuple[Callable[[Location], Tables], ...] = (
    SessionDB,
    GatewayDB,
    lambda url: Inbox(url, SystemClock()),
    StagedWrites,
    JobState,
    Outbox,
    ProviderHealth,
    lambda url: SecretStore(url, None),
    ApprovalStore,
    PeopleStore,
    PreferenceStore,
)
"""Every component with tables in ``state.db``: opened on the URL, each creates its own."""


COPY_RATE = 50 * 1024 * 1024
"""Bytes a second assumed for the copy and the migration of a SQLite file (an estimate)."""


def migrate_command(
    check: Annotated[
        bool, typer.Option("--check", help="Only say what would happen; change nothing.")
    ] = False,
) -> None:
    """Bring the database's schema up to this chorus's version (the gateway does it at start)."""
    cfg = settings()
    where = database_location(cfg)
    try:
        state = inspect_schema(where)
    except MemoryLayerError as exc:
        raise fail(str(exc)) from None
    if state.too_new:
        raise fail(f"the database has {state.describe()}")
    if check:
        out.print(_plan(state, where), markup=False)
        return
    try:
        for open_component in COMPONENTS:
            open_component(where).close()
    except MemoryLayerError as exc:
        raise fail(str(exc)) from None
    if state.outdated:
        logger.info("schema migrated from %s to %d", state.found, state.target)
        out.print(f"migrated the database from schema {state.found} to {state.target}")
    elif state.found is None:
        out.print(f"created the database with schema {state.target}")
    else:
        out.print(f"schema {state.target} is current; nothing to do")


def _plan(state: SchemaState, where: Location) -> str:
    """What ``chorus migrate`` would do to the database, with the time and disk it needs."""
    if state.current:
        return f"schema {state.target} is current; nothing to do"
    if state.found is None:
        return f"no database yet; `chorus migrate` creates it with schema {state.target}"
    if isinstance(where, str):
        return (
            f"{state.describe()}: in one transaction in PostgreSQL, under the schema lock "
            "(gateways and workers starting meanwhile wait for it)"
        )
    free = shutil.disk_usage(where.parent).free
    seconds = max(1, math.ceil(2 * state.size / COPY_RATE))
    return (
        f"{state.describe()}: first a copy of {where.name} as it is "
        f"({where.name}.v{state.found}.bak, {_mb(state.size)}), then the migration; "
        f"needs about {_mb(2 * state.size)} free on disk ({_mb(free)} free) "
        f"and about {seconds} s"
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def migrate_db_command(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            envvar="DATABASE_URL",
            show_envvar=True,
            help="postgresql://user:password@host:port/database (empty); default: DATABASE_URL",
        ),
    ],
) -> None:
    """Copy CHORUS_HOME's database and memory files into an empty PostgreSQL database."""
    cfg = settings()
    if not is_postgres(to):
        raise fail("--to (or DATABASE_URL) must be a postgresql:// URL")
    source = ChorusPaths(cfg.home).state_db
    target = safe_location(to)
    with alone(cfg.home) as running:
        if running is not None:
            logger.warning("migrate-db refused: a gateway or worker runs on %s", cfg.home)
            raise fail(
                f"a chorus gateway or worker is running on {cfg.home} ({running}): stop it "
                "first, or what it writes after the copy stays behind in SQLite"
            )
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

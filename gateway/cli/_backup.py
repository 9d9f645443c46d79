"""``chorus backup`` and ``chorus restore``: a CHORUS_HOME in one archive, and back.

With ``database.url`` set the memory files are read from and restored into
PostgreSQL, at the same paths in the archive as on disk, and every table of the
database is in the archive as of one instant; ``chorus restore`` loads them
into an empty database (the one ``database.url`` or ``DATABASE_URL`` names),
after creating chorus's tables there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from gateway.access import GatewayDB
from gateway.cli._common import fail, out, settings
from gateway.cli._running import alone
from gateway.clock import SystemClock
from gateway.config import database_location, load_settings, resolve_home
from gateway.errors import GatewayError
from gateway.sessions import Inbox
from memory.approvals import ApprovalStore
from memory.backup import BackupError, BackupSummary, write_backup
from memory.backup_pg import DUMP_DIR
from memory.backup_restore import restore_backup
from memory.backup_verify import VerifyReport, prune_backups, verify_backup
from memory.database import Location, is_postgres, safe_location
from memory.jobs import JobLedger, JobState, Outbox
from memory.paths import ChorusPaths
from memory.providers import ProviderHealth
from memory.secrets import SecretStore
from memory.store import PostgresMemoryFiles, StagedWrites
from memory.tables import Tables

LEFT_OUT_SHOWN = 10
"""Names of members left out that the restore lists."""

BESIDE_TRANSCRIPTS: tuple[Callable[[str], Tables], ...] = (
    GatewayDB,
    lambda url: Inbox(url, SystemClock()),
    StagedWrites,
    JobState,
    JobLedger,
    Outbox,
    ProviderHealth,
    lambda url: SecretStore(url, None),
    ApprovalStore,
)
"""Every component with tables in PostgreSQL besides the transcripts (which a
restore makes at the backup's schema version) and the memory files: a restore
opens each on the URL, and each creates its own tables."""


def _tables_maker(home: Path) -> Callable[[str], None]:
    def prepare_tables(url: str) -> None:
        for open_component in BESIDE_TRANSCRIPTS:
            open_component(url).close()
        PostgresMemoryFiles(url, ChorusPaths(home).memories_dir).close()

    return prepare_tables


def _verified(report: VerifyReport) -> str:
    text = f"{report.databases} databases pass their integrity check"
    if report.tables:
        text += f"; {report.tables} PostgreSQL tables hold the {report.rows} rows listed"
    return text


def backup_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A .tar.gz to write, or a directory to put a dated one in (default: .)"
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Check every database in the archive once it is written."),
    ] = False,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep",
            min=1,
            help="Then remove the oldest chorus-backup-*.tar.gz beside it beyond the newest N.",
        ),
    ] = None,
) -> None:
    """Back up CHORUS_HOME into one .tar.gz (safe while the gateway runs; .env left out).

    Every SQLite database is copied with SQLite's online backup. With database.url
    set, every table of the PostgreSQL database is copied too, as of one instant
    (a repeatable-read snapshot; no pg_dump needed), and the memory files with it.
    """
    cfg = settings()
    try:
        where = database_location(cfg)
        summary = write_backup(cfg.home, path if path is not None else Path.cwd(), where=where)
    except (BackupError, GatewayError) as exc:
        raise fail(str(exc)) from None
    out.print(
        f"backed up {summary.files} files (schema version {summary.schema_version}) "
        f"to {summary.path}",
        markup=False,
    )
    if is_postgres(where):
        out.print(
            f"and {summary.tables} PostgreSQL tables ({summary.rows} rows) of "
            f"{safe_location(where)}, as of one instant; the memory files came from there",
            markup=False,
        )
    if verify:
        try:
            report = verify_backup(summary.path)
        except BackupError as exc:
            raise fail(str(exc)) from None
        out.print(f"verified: {_verified(report)}", markup=False)
    if keep is not None:
        try:
            removed = prune_backups(summary.path, keep)
        except BackupError as exc:
            raise fail(str(exc)) from None
        for old in removed:
            out.print(f"removed the old backup {old}", markup=False)


def restore_command(
    path: Annotated[Path, typer.Argument(help="An archive written by chorus backup.")],
    force: Annotated[
        bool, typer.Option("--force", help="Restore into a CHORUS_HOME that is not empty.")
    ] = False,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include",
            help="Also restore config.yaml or plugins (code that will run); repeat for both.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check", help="Only check the archive and every database in it; restore nothing."
        ),
    ] = False,
) -> None:
    """Restore a backup's data (memories, state.db, providers) into an empty CHORUS_HOME.

    config.yaml and plugins/ only with --include; .env never. Every member is
    checked before anything is written. Then run chorus doctor.

    With database.url set (DATABASE_URL, or the home's config.yaml) the tables of
    a PostgreSQL backup are loaded into that database, which must hold no rows,
    and the memory files go there too.
    """
    if check:
        try:
            report = verify_backup(path)
        except BackupError as exc:
            raise fail(str(exc)) from None
        out.print(f"{path} is whole: {report.files} files, {_verified(report)}", markup=False)
        return
    home = resolve_home(dict(os.environ))
    # --force writes over a home in use: not while a gateway or worker runs on it (a
    # home without --force is empty, so nothing runs there)
    with alone(home) if force else nullcontext(None) as running:
        if running is not None:
            raise fail(
                f"a chorus gateway or worker is running on {home} ({running}): stop it "
                "first, or it goes on writing over what is restored"
            )
        try:
            where = _restore_location(home)
            summary = restore_backup(
                path,
                home,
                force=force,
                where=where,
                include=frozenset(include or ()),
                prepare_tables=_tables_maker(home),
            )
        except (BackupError, GatewayError) as exc:
            raise fail(str(exc)) from None
    out.print(f"restored {summary.files} files into {home}; now run: chorus doctor", markup=False)
    _report_restore(summary, where)


def _report_restore(summary: BackupSummary, where: Location) -> None:
    if summary.tables:
        out.print(
            f"restored {summary.tables} tables ({summary.rows} rows) into PostgreSQL "
            f"{safe_location(where)}; the memory files are there",
            markup=False,
        )
    elif is_postgres(where):
        out.print("memory files were written into PostgreSQL (database.url)", markup=False)
    tables = [name for name in summary.left_out if name.startswith(f"{DUMP_DIR}/")]
    left_out = [name for name in summary.left_out if name not in tables]
    if tables:
        out.print(
            f"not restored: the backup's {len(tables)} PostgreSQL tables (transcripts, "
            "inbox, jobs, access): set database.url or DATABASE_URL to an empty PostgreSQL "
            "database and restore into an empty home again to have them",
            markup=False,
        )
    if left_out:
        shown = ", ".join(left_out[:LEFT_OUT_SHOWN])
        more = len(left_out) - LEFT_OUT_SHOWN
        out.print(
            f"not restored: {shown}{f' and {more} more' if more > 0 else ''} "
            "(config.yaml and plugins only with --include; .env never)",
            markup=False,
        )


def _restore_location(home: Path) -> Location:
    """``database_location`` of the home being restored into, without creating it.

    Read before unpacking, so ``database.url`` comes from the environment (or a
    config.yaml the home has already), not from the archive's config.yaml.
    """
    return database_location(load_settings(home, create_home=False))

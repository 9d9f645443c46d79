"""``chorus backup`` and ``chorus restore``: a CHORUS_HOME in one archive, and back.

With ``database.url`` set the memory files are read from and restored into
PostgreSQL, at the same paths in the archive as on disk; the transcripts and
other tables in PostgreSQL are left to ``pg_dump``/``pg_restore``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli._common import fail, out, settings
from gateway.config import database_location, load_settings, resolve_home
from gateway.errors import GatewayError
from memory.backup import BackupError, restore_backup, write_backup
from memory.backup_verify import prune_backups, verify_backup
from memory.database import Location, is_postgres

LEFT_OUT_SHOWN = 10
"""Names of members left out that the restore lists."""

PG_DUMP_NOTE = (
    "transcripts and the other tables are in PostgreSQL (database.url): "
    "back them up with pg_dump and restore them with pg_restore"
)


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
    set, the memory files come from PostgreSQL; the transcripts there are not
    copied: back them up with pg_dump.
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
    if verify:
        try:
            report = verify_backup(summary.path)
        except BackupError as exc:
            raise fail(str(exc)) from None
        out.print(
            f"verified: {report.databases} databases pass their integrity check", markup=False
        )
    if keep is not None:
        try:
            removed = prune_backups(summary.path, keep)
        except BackupError as exc:
            raise fail(str(exc)) from None
        for old in removed:
            out.print(f"removed the old backup {old}", markup=False)
    if is_postgres(where):
        out.print(f"memory files were read from PostgreSQL; {PG_DUMP_NOTE}", markup=False)


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

    With database.url set (in the environment, or the home's config.yaml) the
    memory files go into PostgreSQL; restore the transcripts there with pg_restore.
    """
    if check:
        try:
            report = verify_backup(path)
        except BackupError as exc:
            raise fail(str(exc)) from None
        out.print(
            f"{path} is whole: {report.files} files, {report.databases} databases "
            "pass their integrity check",
            markup=False,
        )
        return
    home = resolve_home(dict(os.environ))
    try:
        where = _restore_location(home)
        summary = restore_backup(
            path, home, force=force, where=where, include=frozenset(include or ())
        )
    except (BackupError, GatewayError) as exc:
        raise fail(str(exc)) from None
    out.print(f"restored {summary.files} files into {home}; now run: chorus doctor", markup=False)
    if summary.left_out:
        shown = ", ".join(summary.left_out[:LEFT_OUT_SHOWN])
        more = len(summary.left_out) - LEFT_OUT_SHOWN
        out.print(
            f"not restored: {shown}{f' and {more} more' if more > 0 else ''} "
            "(config.yaml and plugins only with --include; .env never)",
            markup=False,
        )
    if is_postgres(where):
        out.print(f"memory files were written into PostgreSQL; {PG_DUMP_NOTE}", markup=False)


def _restore_location(home: Path) -> Location:
    """``database_location`` of the home being restored into, without creating it.

    Read before unpacking, so ``database.url`` comes from the environment (or a
    config.yaml the home has already), not from the archive's config.yaml.
    """
    return database_location(load_settings(home, create_home=False))

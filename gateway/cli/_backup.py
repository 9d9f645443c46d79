"""``chorus backup`` and ``chorus restore``: a CHORUS_HOME in one archive, and back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli._common import fail, out, settings
from gateway.config import resolve_home
from memory.backup import BackupError, restore_backup, write_backup


def backup_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A .tar.gz to write, or a directory to put a dated one in (default: .)"
        ),
    ] = None,
) -> None:
    """Back up CHORUS_HOME into one .tar.gz (safe while the gateway runs; .env left out)."""
    cfg = settings()
    try:
        summary = write_backup(cfg.home, path if path is not None else Path.cwd())
    except BackupError as exc:
        raise fail(str(exc)) from None
    out.print(
        f"backed up {summary.files} files (schema version {summary.schema_version}) "
        f"to {summary.path}",
        markup=False,
    )


def restore_command(
    path: Annotated[Path, typer.Argument(help="An archive written by chorus backup.")],
    force: Annotated[
        bool, typer.Option("--force", help="Restore into a CHORUS_HOME that is not empty.")
    ] = False,
) -> None:
    """Restore a backup into an empty CHORUS_HOME; then run chorus doctor."""
    home = resolve_home(dict(os.environ))
    try:
        summary = restore_backup(path, home, force=force)
    except BackupError as exc:
        raise fail(str(exc)) from None
    out.print(f"restored {summary.files} files into {home}; now run: chorus doctor", markup=False)

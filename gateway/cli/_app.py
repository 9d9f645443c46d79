"""The ``chorus`` command line: one typer app, a module per command group.

Every command loads settings through ``gateway.config``; any expected failure
prints one line to stderr and exits non-zero, never a traceback.
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer

from gateway import logs
from gateway.cli._backup import backup_command, restore_command
from gateway.cli._memory import memory_app
from gateway.cli._migrate import migrate_command, migrate_db_command
from gateway.cli._people import users_link  # noqa: F401  (adds ``chorus users link|unlink``)
from gateway.cli._queue import queue_app
from gateway.cli._run import console_command, doctor_command, gateway_command, worker_command
from gateway.cli._secrets import secrets_app
from gateway.cli._sessions import sessions_app
from gateway.cli._usage import usage_app
from gateway.cli._users import users_app
from memory import log_content

app = typer.Typer(
    name="chorus",
    help="A chat gateway for LLM agents with per-user memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(memory_app, name="memory")
app.add_typer(sessions_app, name="sessions")
app.add_typer(queue_app, name="queue")
app.add_typer(users_app, name="users")
app.add_typer(secrets_app, name="secrets")
app.add_typer(usage_app, name="usage")
app.command("console")(console_command)
app.command("gateway")(gateway_command)
app.command("worker")(worker_command)
app.command("doctor")(doctor_command)
app.command("backup")(backup_command)
app.command("restore")(restore_command)
app.command("migrate")(migrate_command)
app.command("migrate-db")(migrate_db_command)


def _version() -> str:
    try:
        return version("chorus")
    except PackageNotFoundError:
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"chorus {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """chorus: talk to an LLM agent on Telegram, Discord, Slack and the terminal."""


def main() -> None:
    """Console-script entry point: logging to stderr, then the typer app."""
    level = getattr(logging, os.environ.get("CHORUS_LOG_LEVEL", "WARNING").upper(), None)
    level = level if isinstance(level, int) else logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logs.formatter(os.environ.get("CHORUS_LOG_FORMAT")))
    logging.basicConfig(level=level, handlers=[handler])
    logs.install()
    logs.show_status(level)
    os.umask(0o077)  # every file chorus creates (state.db, memory files) is its user's only
    # people's text is logged at DEBUG only, and only when asked for
    log_content.enable(level <= logging.DEBUG and os.environ.get("CHORUS_LOG_CONTENT") == "1")
    logs.hold_library_loggers(log_content.enabled())
    try:
        app()
    except PermissionError as exc:  # a file chorus needs that this uid may not touch
        logging.getLogger(__name__).debug("permission denied", exc_info=True)
        where = exc.filename if exc.filename is not None else "a file chorus needs"
        typer.echo(
            f"error: uid {os.geteuid()} cannot access {where} ({exc.strerror}); "
            "give it to this uid or run chorus as its owner",
            err=True,
        )
        sys.exit(2)

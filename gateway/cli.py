"""The ``chorus`` command line.

Every command loads settings through ``gateway.config``; any expected failure
prints one line to stderr and exits non-zero, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gateway import cli_ops, doctor, log_redaction
from gateway.config import Settings, load_settings
from gateway.console import run_console
from gateway.errors import GatewayError
from gateway.service import run_gateway
from memory.errors import MemoryStoreError
from memory.paths import ChorusPaths, parse_user_key
from memory.store import MemoryStore
from memory.transcripts import SessionDB

logger = logging.getLogger(__name__)

app = typer.Typer(
    name="chorus",
    help="A chat gateway for LLM agents with per-user memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
memory_app = typer.Typer(help="Inspect curated memory files.", no_args_is_help=True)
sessions_app = typer.Typer(help="Inspect session transcripts.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")
app.add_typer(sessions_app, name="sessions")
app.add_typer(cli_ops.queue_app, name="queue")
app.add_typer(cli_ops.users_app, name="users")
app.command("worker")(cli_ops.worker_command)
memory_app.command("providers")(cli_ops.providers_command)
memory_app.command("pending")(cli_ops.memory_pending_command)
memory_app.command("approve")(cli_ops.memory_approve_command)
memory_app.command("reject")(cli_ops.memory_reject_command)

out = Console(highlight=False, soft_wrap=True)


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


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one clear line to stderr; ``raise fail(...)`` exits with ``code``."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def settings() -> Settings:
    try:
        return load_settings()
    except GatewayError as exc:
        raise fail(str(exc), 2) from None


@memory_app.command("show")
def memory_show(
    user: Annotated[
        str | None,
        typer.Option("--user", help="PLATFORM:ID — show that user's USER.md instead."),
    ] = None,
) -> None:
    """Print the shared MEMORY.md, or one user's USER.md, with usage."""
    cfg = settings()
    paths = ChorusPaths(cfg.home)
    try:
        ref = parse_user_key(user) if user else None
        user_file = paths.user_file(ref) if ref else paths.users_dir / ".none" / "USER.md"
    except MemoryStoreError as exc:
        raise fail(str(exc)) from None
    store = MemoryStore(
        paths.memory_file,
        user_file,
        memory_char_limit=cfg.memory.memory_char_limit,
        user_char_limit=cfg.memory.user_char_limit,
    )
    store.load_from_disk()
    target = "user" if ref else "memory"
    label = f"USER.md of {ref}" if ref else "MEMORY.md (shared)"
    block = store.format_for_system_prompt(target)
    if block is None:
        out.print(f"{label}: empty")
        return
    out.print(block, markup=False)


def _open_db(cfg: Settings) -> SessionDB:
    try:
        return SessionDB(ChorusPaths(cfg.home).state_db)
    except MemoryStoreError as exc:
        raise fail(str(exc)) from None


@sessions_app.command("list")
def sessions_list(
    user: Annotated[str | None, typer.Option("--user", help="Only this PLATFORM:ID.")] = None,
    active: Annotated[bool, typer.Option("--active", help="Only sessions not ended.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
) -> None:
    """List sessions, newest first."""
    cfg = settings()
    try:
        user_key = parse_user_key(user).key if user else None
    except MemoryStoreError as exc:
        raise fail(str(exc)) from None
    db = _open_db(cfg)
    try:
        records = db.list_sessions(user_key=user_key, active_only=active, limit=limit)
    finally:
        db.close()
    if not records:
        out.print("no sessions")
        return
    table = Table("session", "user", "started", "messages", "ended")
    for rec in records:
        ended = rec.end_reason or "" if rec.ended_at else "active"
        table.add_row(rec.id, rec.user_key, _when(rec.started_at), str(rec.message_count), ended)
    out.print(table)


@sessions_app.command("search")
def sessions_search(
    query: Annotated[str, typer.Argument(help="Words to look for.")],
    user: Annotated[str, typer.Option("--user", help="PLATFORM:ID whose sessions to search.")],
    limit: Annotated[int, typer.Option("--limit", min=1)] = 10,
) -> None:
    """Full-text search over one user's transcripts."""
    cfg = settings()
    try:
        ref = parse_user_key(user)
    except MemoryStoreError as exc:
        raise fail(str(exc)) from None
    db = _open_db(cfg)
    try:
        hits = db.for_user(ref.key).search(query, limit=limit)
    finally:
        db.close()
    if not hits:
        out.print("no matches")
        return
    for hit in hits:
        out.print(f"{hit.date}  {hit.session_id}  {hit.role}: {hit.snippet}", markup=False)


@app.command("console")
def console_command() -> None:
    """Talk to the agent in this terminal (needs only an LLM endpoint)."""
    cfg = settings()
    try:
        asyncio.run(run_console(cfg))
    except GatewayError as exc:
        raise fail(str(exc), 2) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@app.command("gateway")
def gateway_command() -> None:
    """Run the service: platform adapters, sessions, background jobs, HTTP probes."""
    cfg = settings()
    try:
        code = asyncio.run(run_gateway(cfg))
    except GatewayError as exc:
        raise fail(str(exc), 2) from None
    raise typer.Exit(code)


@app.command("doctor")
def doctor_command() -> None:
    """Check configuration, CHORUS_HOME and the database."""
    results = doctor.run_checks()
    for result in results:
        mark = "ok  " if result.ok else "FAIL"
        out.print(f"[{mark}] {result.name}: {result.detail}", markup=False)
    if not all(result.ok for result in results):
        raise typer.Exit(1)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def main() -> None:
    """Console-script entry point: logging to stderr, then the typer app."""
    level = os.environ.get("CHORUS_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    log_redaction.install()
    app()

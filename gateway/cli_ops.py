"""Operator commands: ``chorus worker``, ``chorus queue …``, ``chorus memory providers``."""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gateway.auth import Authorizer
from gateway.background import make_queue
from gateway.clock import SystemClock
from gateway.config import Settings
from gateway.errors import GatewayError
from gateway.gateway_db import GatewayDB
from gateway.memory_review import review
from gateway.worker import run_worker
from memory.paths import ChorusPaths
from memory.store import MemoryStore, StagedWrites
from plugins.memory import discover_memory_providers

queue_app = typer.Typer(help="Inspect and repair the background job queue.", no_args_is_help=True)
out = Console(highlight=False, soft_wrap=True)


def _settings() -> Settings:
    from gateway.cli import settings

    return settings()


def worker_command(
    burst: Annotated[bool, typer.Option("--burst", help="Run what is queued, then exit.")] = False,
) -> None:
    """Run background jobs from Redis (needs redis.url)."""
    cfg = _settings()
    try:
        run_worker(cfg, burst=burst)
    except GatewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@queue_app.command("status")
def queue_status() -> None:
    """Queue depths and failed jobs."""
    cfg = _settings()
    queue = make_queue(cfg, start_drainer=False)
    try:
        status = queue.status()
    finally:
        queue.close(0)
    reach = "reachable" if status.reachable else "UNREACHABLE"
    out.print(f"backend: {status.backend} ({reach})", markup=False)
    for name in ("queued", "started", "deferred", "scheduled", "failed", "outbox"):
        out.print(f"{name:>10}: {getattr(status, name)}", markup=False)
    if status.failed_jobs:
        table = Table("failed job", "session", "function", "failed at", "error")
        for job in status.failed_jobs:
            when = (
                datetime.fromtimestamp(job.failed_at, UTC).strftime("%Y-%m-%d %H:%M")
                if job.failed_at
                else ""
            )
            table.add_row(job.job_id, job.session_id, job.func, when, job.error)
        out.print(table)
    if not status.reachable:
        raise typer.Exit(1)


@queue_app.command("retry-failed")
def queue_retry_failed() -> None:
    """Requeue every failed job."""
    cfg = _settings()
    queue = make_queue(cfg, start_drainer=False)
    try:
        count = queue.retry_failed()
    finally:
        queue.close(0)
    out.print(f"requeued {count} failed job(s)")


def providers_command(
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="Load each provider to ask if available.")
    ] = True,
) -> None:
    """List memory providers: name, description, available, active."""
    cfg = _settings()
    infos = discover_memory_providers(cfg.home, cfg.memory.provider, check_available=check)
    if not infos:
        out.print("no memory providers installed (built-in memory only)")
    else:
        table = Table("name", "description", "source", "available", "active")
        for info in infos:
            available = "?" if info.available is None else ("yes" if info.available else "no")
            if info.error:
                available += f" ({info.error})"
            table.add_row(
                info.name, info.description, info.source, available, "yes" if info.active else ""
            )
        out.print(table)
    if cfg.memory.provider and cfg.memory.provider not in {i.name for i in infos}:
        out.print(f"configured provider {cfg.memory.provider!r} is not installed", markup=False)
        raise typer.Exit(1)


def _review(action: str, target: str) -> None:
    cfg = _settings()
    paths = ChorusPaths(cfg.home)
    staging = StagedWrites(paths.state_db)
    store = MemoryStore(
        paths.memory_file,
        paths.users_dir / ".cli" / "USER.md",
        memory_char_limit=cfg.memory.memory_char_limit,
        user_char_limit=cfg.memory.user_char_limit,
    )
    actor = f"cli:{getpass.getuser()}"
    try:
        out.print(review(staging, store, action, target, actor), markup=False)
        if action != "pending":
            with GatewayDB(paths.state_db) as db:
                db.audit(actor, f"memory {action}", target, "ok", time.time())
    finally:
        staging.close()


def memory_pending_command() -> None:
    """List writes to the shared MEMORY.md waiting for review."""
    _review("pending", "")


def memory_approve_command(
    target: Annotated[str, typer.Argument(help="A staged write's id, or all.")],
) -> None:
    """Approve staged writes (threat scan and limits run again against MEMORY.md now)."""
    _review("approve", target)


def memory_reject_command(
    target: Annotated[str, typer.Argument(help="A staged write's id, or all.")],
) -> None:
    """Reject staged writes."""
    _review("reject", target)


users_app = typer.Typer(help="Who may talk to the bot.", no_args_is_help=True)


def _authorize(command: str, argument: str, act: Callable[[Authorizer, str], str]) -> None:
    cfg = _settings()
    actor = f"cli:{getpass.getuser()}"
    with GatewayDB(ChorusPaths(cfg.home).state_db) as db:
        auth = Authorizer(cfg.auth, db, SystemClock())
        result = act(auth, actor)
        outcome = getattr(result, "outcome", "ok")
        db.audit(actor, f"users {command}", argument, outcome, time.time())
    out.print(result, markup=False)
    if outcome != "ok":
        raise typer.Exit(1)


@users_app.command("approve")
def users_approve(
    code: Annotated[str, typer.Argument(help="The pairing code a user got.")],
) -> None:
    """Approve a pairing code (the same as /admin approve in a chat)."""
    _authorize("approve", "<code>", lambda auth, actor: auth.approve_code(code, actor))


@users_app.command("allow")
def users_allow(user: Annotated[str, typer.Argument(help="PLATFORM:ID")]) -> None:
    """Let a user talk to the bot."""
    _authorize("allow", user, lambda auth, actor: auth.allow(user, actor))


@users_app.command("deny")
def users_deny(user: Annotated[str, typer.Argument(help="PLATFORM:ID")]) -> None:
    """Stop a user from talking to the bot (admins from the config cannot be denied)."""
    _authorize("deny", user, lambda auth, actor: auth.deny(user, actor))


@users_app.command("list")
def users_list() -> None:
    """Admins, allowed and denied users, and where each decision came from."""
    cfg = _settings()
    with GatewayDB(ChorusPaths(cfg.home).state_db) as db:
        rows = Authorizer(cfg.auth, db, SystemClock()).users()
    if not rows:
        out.print("no users configured or approved")
        return
    table = Table("user", "state", "source", "by")
    for row in rows:
        table.add_row(row.user_key, row.state, row.source, row.by or "")
    out.print(table)

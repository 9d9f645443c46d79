"""``chorus queue …``: the background job queue, as an operator repairs it."""

from __future__ import annotations

import typer
from rich.table import Table

from gateway.cli._common import out, settings, when

queue_app = typer.Typer(help="Inspect and repair the background job queue.", no_args_is_help=True)


@queue_app.command("status")
def queue_status() -> None:
    """Queue depths and failed jobs."""
    from gateway.app import queue_from_settings

    cfg = settings()
    queue = queue_from_settings(cfg, start_drainer=False)
    try:
        status = queue.status()
    finally:
        queue.close(0, drain=False)
    reach = "reachable" if status.reachable else "UNREACHABLE"
    out.print(f"backend: {status.backend} ({reach})", markup=False)
    for name in ("queued", "started", "deferred", "scheduled", "failed", "outbox"):
        out.print(f"{name:>10}: {getattr(status, name)}", markup=False)
    if status.failed_jobs:
        table = Table("failed job", "session", "function", "failed at", "error")
        for job in status.failed_jobs:
            table.add_row(job.job_id, job.session_id, job.func, when(job.failed_at), job.error)
        out.print(table)
    if not status.reachable:
        raise typer.Exit(1)


@queue_app.command("retry-failed")
def queue_retry_failed() -> None:
    """Requeue every failed job."""
    from gateway.app import queue_from_settings

    cfg = settings()
    queue = queue_from_settings(cfg, start_drainer=False)
    try:
        count = queue.retry_failed()
    finally:
        queue.close(0, drain=False)
    out.print(f"requeued {count} failed job(s)")

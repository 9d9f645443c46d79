"""``chorus console``, ``chorus gateway``, ``chorus worker``, ``chorus doctor``: run or check it."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from pydantic import ValidationError

from gateway.cli._common import fail, out, settings
from gateway.cli._running import running
from gateway.config import GatewaySettings, Settings
from gateway.errors import GatewayError
from memory.errors import MemoryLayerError


def console_command() -> None:
    """Talk to the agent in this terminal (needs only an LLM endpoint)."""
    from gateway.app import run_console

    cfg = settings()
    try:
        asyncio.run(run_console(cfg))
    except (GatewayError, MemoryLayerError) as exc:
        raise fail(str(exc), 2) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def gateway_command(
    replica_id: Annotated[
        str | None,
        typer.Option(
            "--replica-id",
            help="This replica's name among several (default: gateway.replica_id, else the "
            "host name); unique per process.",
        ),
    ] = None,
) -> None:
    """Run the service: platform adapters, sessions, background jobs, HTTP probes."""
    from gateway.app import run_gateway

    cfg = settings()
    if replica_id is not None:
        cfg = with_replica_id(cfg, replica_id)
    try:
        with running(cfg.home):
            code = asyncio.run(run_gateway(cfg))
    except (GatewayError, MemoryLayerError) as exc:
        raise fail(str(exc), 2) from None
    raise typer.Exit(code)


def with_replica_id(cfg: Settings, replica_id: str) -> Settings:
    """``cfg`` with ``gateway.replica_id`` from the command line (checked like the setting)."""
    try:
        gateway = GatewaySettings.model_validate(
            {**cfg.gateway.model_dump(), "replica_id": replica_id}
        )
    except ValidationError:
        raise fail("--replica-id: use 1-100 letters, digits, '.', '_', ':' or '-'", 2) from None
    if cfg.redis.url is None or cfg.database.url is None:
        raise fail("--replica-id: several replicas need redis.url and database.url", 2)
    return cfg.model_copy(update={"gateway": gateway})


def worker_command(
    burst: Annotated[bool, typer.Option("--burst", help="Run what is queued, then exit.")] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Worker processes to run at once.")
    ] = 1,
) -> None:
    """Run background jobs from Redis (needs redis.url)."""
    from gateway.app import run_worker

    cfg = settings()
    try:
        with running(cfg.home):
            run_worker(cfg, burst=burst, concurrency=concurrency)
    except (GatewayError, MemoryLayerError) as exc:
        raise fail(str(exc), 2) from None


def doctor_command() -> None:
    """Check configuration, CHORUS_HOME and the database."""
    from gateway.cli._doctor import run_checks

    results = run_checks()
    for result in results:
        mark = "ok  " if result.ok else "FAIL"
        out.print(f"[{mark}] {result.name}: {result.detail}", markup=False)
    if not all(result.ok for result in results):
        raise typer.Exit(1)

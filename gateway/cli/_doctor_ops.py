"""``chorus doctor``'s operations lines: the version, what runs on the home, the way
back from the last migration, and where /metrics and the probes are served.

Each reads and never writes: the running check tries the lock ``chorus gateway``
and ``chorus worker`` hold (``gateway.cli._running``) without creating it, and
the copies a migration leaves are read read-only.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NamedTuple

from gateway.cli._running import LOCK_NAME, holders, lock_path
from gateway.config import Settings
from memory.paths import ChorusPaths


class OpsLine(NamedTuple):
    name: str
    ok: bool
    detail: str


def chorus_version() -> str:
    try:
        return version("chorus")
    except PackageNotFoundError:
        return "0.0.0"


def check_version(settings: Settings) -> OpsLine:
    return OpsLine("version", True, f"chorus {chorus_version()}")


def running_on(home: Path) -> str | None:
    """Who runs on ``home`` ("pid 12, 34", "a process"), or None: read from the lock
    file without creating it (a home nothing has run on has none)."""
    path = lock_path(home)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pids = holders(path)
            return f"pid {', '.join(map(str, pids))}" if pids else "a process"
        return None
    finally:
        os.close(fd)  # lets go of the lock at once if it was taken


def check_running(settings: Settings) -> OpsLine:
    try:
        who = running_on(settings.home)
    except OSError as exc:
        return OpsLine("running", True, f"cannot tell ({exc.strerror}: {LOCK_NAME})")
    if who is None:
        return OpsLine("running", True, "no chorus gateway or worker runs on this home")
    return OpsLine(
        "running",
        True,
        f"a chorus gateway or worker runs on this home ({who}): stop it before "
        "chorus migrate-db, a restore or a rollback",
    )


def _schema_of(path: Path) -> int | None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def check_rollback(settings: Settings) -> OpsLine:
    state_db = ChorusPaths(settings.home).state_db
    copies = sorted(
        state_db.parent.glob(f"{state_db.name}.v*.bak"),
        key=lambda path: path.stat().st_mtime,
    )
    if not copies:
        return OpsLine("rollback", True, "no copy left by a migration (nothing to roll back to)")
    newest = copies[-1]
    schema = _schema_of(newest)
    kind = f"schema {schema}" if schema is not None else "not readable as a database"
    more = f" ({len(copies) - 1} older beside it)" if len(copies) > 1 else ""
    return OpsLine(
        "rollback",
        True,
        f"{newest.name} ({kind}) is the database as it was before the last migration{more}: "
        "the way back to the version before; chorus backup leaves it out, delete it once "
        "this version runs well",
    )


def check_metrics(settings: Settings) -> OpsLine:
    http, metrics = settings.gateway.http, settings.gateway.metrics
    if metrics.port is None:
        return OpsLine(
            "metrics",
            True,
            f"/metrics, /healthz and /readyz on the webhooks' port {http.port}: set "
            "gateway.metrics.port so a public load balancer in front of the webhooks "
            "cannot reach them",
        )
    host = metrics.host or http.host
    return OpsLine(
        "metrics",
        True,
        f"/metrics, /healthz and /readyz on {host}:{metrics.port} (gateway.metrics.port), "
        f"apart from the webhooks' port {http.port}",
    )


OPS_CHECKS: tuple[Callable[[Settings], OpsLine], ...] = (
    check_version,
    check_running,
    check_rollback,
    check_metrics,
)
"""Run after the others; each line names itself."""

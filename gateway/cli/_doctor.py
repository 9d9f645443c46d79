"""``chorus doctor``: checks an operator can run before starting the service.

Each check returns a ``CheckResult``; none raises. Later layers add their own
checks (LLM endpoint, Redis, platforms) to ``CHECKS``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.errors import LLMError
from agent.llm import LLMClient
from gateway.adapters import PLATFORMS, PlatformSpec
from gateway.app import queue_from_settings
from gateway.cli._doctor_ops import OPS_CHECKS, OpsLine
from gateway.cli._doctor_tools import tool_server_lines
from gateway.config import (
    Settings,
    database_location,
    load_settings,
    require_private_home,
    resolve_home,
)
from gateway.errors import ConfigError
from memory.database import safe_location
from memory.errors import SessionDBError
from memory.paths import ChorusPaths
from memory.transcripts import fts5_available, inspect_schema
from plugins.memory import (
    discover_memory_providers,
    load_memory_provider,
    local_state_refusal,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def run_checks(environ: Mapping[str, str] | None = None) -> list[CheckResult]:
    """Run every check in order; later checks are skipped when config is invalid."""
    env = dict(os.environ if environ is None else environ)
    home = resolve_home(env)
    try:
        settings = load_settings(home, env)
    except ConfigError as exc:
        return [CheckResult("config", False, str(exc))]
    results = [CheckResult("config", True, _config_detail(settings))]
    for check in CHECKS:
        results.append(_guarded(check, settings))
    try:
        results += [CheckResult(n, ok, one_line(d)) for n, ok, d in tool_server_lines(settings)]
    except Exception as exc:
        logger.debug("doctor check tools raised", exc_info=True)
        results.append(CheckResult("tools", False, f"the check failed ({type(exc).__name__})"))
    return results


def _guarded(check: Callable[[Settings], CheckResult | OpsLine], settings: Settings) -> CheckResult:
    """A check's result, on one line; a check that raises fails with the error's kind."""
    name = check.__name__.removeprefix("check_")
    try:
        result = check(settings)
    except Exception as exc:
        logger.debug("doctor check %s raised", name, exc_info=True)
        return CheckResult(name, False, f"the check failed ({type(exc).__name__})")
    return CheckResult(result.name, result.ok, one_line(result.detail))


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks made single spaces."""
    return " ".join(text.split())


def _config_detail(settings: Settings) -> str:
    source = settings.config_path if settings.config_path.exists() else "defaults (no config.yaml)"
    return f"valid, from {source}"


def check_home_writable(settings: Settings) -> CheckResult:
    home = settings.home
    try:
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor_", delete=True) as handle:
            handle.write(b"ok")
            handle.flush()
    except OSError as exc:
        return CheckResult("home", False, f"{home} is not writable: {exc.strerror}")
    try:
        require_private_home(home)
    except ConfigError as exc:
        return CheckResult("home", False, str(exc))
    return CheckResult("home", True, f"{home} writable, mode {home.stat().st_mode & 0o777:o}")


def check_sqlite(settings: Settings) -> CheckResult:
    """The database's schema and sessions, read without creating or migrating anything."""
    version = sqlite3.sqlite_version
    if not fts5_available():
        return CheckResult("sqlite", False, f"SQLite {version} lacks FTS5; session search needs it")
    where = database_location(settings)
    name = "database" if isinstance(where, str) else "sqlite"
    try:
        state = inspect_schema(where)
    except SessionDBError as exc:
        return CheckResult(name, False, str(exc))
    sessions = "" if state.sessions is None else f": {state.sessions} sessions"
    detail = f"{state.describe()}{sessions}"
    if isinstance(where, str):
        return CheckResult(
            "database", not state.too_new, f"PostgreSQL {safe_location(where)}: {detail}"
        )
    return CheckResult(
        "sqlite", not state.too_new, f"SQLite {version} with FTS5; {where.name}: {detail}"
    )


def check_memory_files(settings: Settings) -> CheckResult:
    paths = ChorusPaths(settings.home)
    shared = paths.memory_file
    size = len(shared.read_text(encoding="utf-8")) if shared.exists() else 0
    limit = settings.memory.memory_char_limit
    users = sum(1 for _ in paths.users_dir.glob("*/*/USER.md")) if paths.users_dir.exists() else 0
    return CheckResult("memory", True, f"MEMORY.md {size:,}/{limit:,} chars; {users} user profiles")


def check_platforms(settings: Settings) -> CheckResult:
    enabled = [spec.name for spec in PLATFORMS if spec.enabled(spec.section_of(settings))]
    detail = ", ".join(enabled) if enabled else "none configured (console only)"
    return CheckResult("platforms", True, detail)


def platform_check(spec: PlatformSpec[Any]) -> Callable[[Settings], CheckResult]:
    """Ask the platform who the bot is (``spec.describe``); never prints the token."""

    def check(settings: Settings) -> CheckResult:
        section = spec.section_of(settings)
        if not spec.is_configured(section):
            return CheckResult(spec.name, True, "not configured")
        ok, detail = asyncio.run(spec.describe(section))
        return CheckResult(spec.name, bool(ok), str(detail))

    check.__name__ = f"check_{spec.name}"
    return check


def check_llm(settings: Settings) -> CheckResult:
    if settings.llm.base_url is None and settings.llm.api_key is None:
        return CheckResult(
            "llm", True, "not configured (set OPENAI_BASE_URL / OPENAI_API_KEY to chat)"
        )

    async def probe() -> str:
        client = LLMClient(settings.llm)
        try:
            return await client.check()
        finally:
            await client.aclose()

    try:
        return CheckResult("llm", True, asyncio.run(probe()))
    except LLMError as exc:
        return CheckResult("llm", False, str(exc))


def check_redis(settings: Settings) -> CheckResult:
    if settings.redis.url is None:
        return CheckResult("redis", True, "not configured; background jobs run in-process")
    queue = queue_from_settings(settings, start_drainer=False)
    try:
        status = queue.status()
    finally:
        queue.close(0, drain=False)
    if not status.reachable:
        return CheckResult("redis", False, f"unreachable; {status.outbox} job(s) in the outbox")
    return CheckResult(
        "redis",
        True,
        f"reachable; {status.queued} queued, {status.failed} failed, {status.outbox} in outbox",
    )


def check_memory_provider(settings: Settings) -> CheckResult:
    name = settings.memory.provider
    if not name:
        return CheckResult("provider", True, "built-in memory only")
    infos = {i.name: i for i in discover_memory_providers(settings.home, name)}
    info = infos.get(name)
    if info is None:
        return CheckResult("provider", False, f"memory provider {name!r} is not installed")
    if not info.available:
        why = info.error or _unavailable_reason(settings, name) or "check"
        return CheckResult("provider", False, f"{name}: not available ({why})")
    refusal = local_state_refusal(
        name,
        settings.home,
        shared_database=settings.database.url is not None,
        local_state=settings.memory.local_state,
    )
    if refusal is not None:
        return CheckResult("provider", False, refusal)
    return CheckResult("provider", True, f"{name} available")


def _unavailable_reason(settings: Settings, name: str) -> str | None:
    """What the provider says it lacks (with the fix), when it says."""
    try:
        reason = getattr(load_memory_provider(name, settings.home), "unavailable_reason", None)
    except Exception as exc:
        logger.debug("memory provider %s: no reason to report (%s)", name, type(exc).__name__)
        return None
    return reason if isinstance(reason, str) else None


CHECKS: list[Callable[[Settings], CheckResult | OpsLine]] = [
    check_home_writable,
    check_sqlite,
    check_memory_files,
    check_memory_provider,
    check_llm,
    check_redis,
    check_platforms,
    *(platform_check(spec) for spec in PLATFORMS),
    *OPS_CHECKS,
]

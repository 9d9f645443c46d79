"""``chorus doctor``: checks an operator can run before starting the service.

Each check returns a ``CheckResult``; none raises. Later layers add their own
checks (LLM endpoint, Redis, platforms) to ``CHECKS``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sqlite3
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pydantic import SecretStr

from agent.errors import LLMError
from agent.llm import LLMClient
from gateway.background import make_queue
from gateway.config import Settings, load_settings, resolve_home
from gateway.errors import ConfigError
from memory.errors import SessionDBError
from memory.paths import ChorusPaths
from memory.transcripts import SessionDB, fts5_available
from plugins.memory import discover_memory_providers

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
        results.append(check(settings))
    return results


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
    mode = home.stat().st_mode & 0o777
    if mode & 0o077:
        return CheckResult("home", False, f"{home} is mode {mode:o}; run: chmod 700 {home}")
    return CheckResult("home", True, f"{home} writable, mode {mode:o}")


def check_sqlite(settings: Settings) -> CheckResult:
    version = sqlite3.sqlite_version
    if not fts5_available():
        return CheckResult("sqlite", False, f"SQLite {version} lacks FTS5; session search needs it")
    path = ChorusPaths(settings.home).state_db
    try:
        db = SessionDB(path)
    except SessionDBError as exc:
        return CheckResult("sqlite", False, str(exc))
    try:
        count = len(db.list_sessions(limit=1_000_000))
    finally:
        db.close()
    return CheckResult("sqlite", True, f"SQLite {version} with FTS5; {path.name}: {count} sessions")


def check_memory_files(settings: Settings) -> CheckResult:
    paths = ChorusPaths(settings.home)
    shared = paths.memory_file
    size = len(shared.read_text(encoding="utf-8")) if shared.exists() else 0
    limit = settings.memory.memory_char_limit
    users = sum(1 for _ in paths.users_dir.glob("*/*/USER.md")) if paths.users_dir.exists() else 0
    return CheckResult("memory", True, f"MEMORY.md {size:,}/{limit:,} chars; {users} user profiles")


def check_platforms(settings: Settings) -> CheckResult:
    enabled = [
        name
        for name, token in (
            ("telegram", settings.telegram.token),
            ("discord", settings.discord.token),
            ("slack", settings.slack.bot_token),
        )
        if token is not None and token.get_secret_value()
    ]
    detail = ", ".join(enabled) if enabled else "none configured (console only)"
    return CheckResult("platforms", True, detail)


def _check_platform(
    name: str, token: SecretStr | None, module: str, section: object
) -> CheckResult:
    """Ask the platform who the bot is (its adapter's ``describe_bot``); never prints the token."""
    if token is None or not token.get_secret_value():
        return CheckResult(name, True, "not configured")
    describe = importlib.import_module(f"gateway.adapters.{module}").describe_bot
    ok, detail = asyncio.run(describe(section))
    return CheckResult(name, bool(ok), str(detail))


def check_telegram(settings: Settings) -> CheckResult:
    """``getMe`` with the configured token and Bot API URL."""
    return _check_platform("telegram", settings.telegram.token, "telegram_bot", settings.telegram)


def check_discord(settings: Settings) -> CheckResult:
    """``GET /users/@me`` with the configured token and API URL."""
    return _check_platform("discord", settings.discord.token, "discord_client", settings.discord)


def check_slack(settings: Settings) -> CheckResult:
    """``auth.test`` with the configured token and API URL."""
    return _check_platform("slack", settings.slack.bot_token, "slack_client", settings.slack)


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
    queue = make_queue(settings, start_drainer=False)
    try:
        status = queue.status()
    finally:
        queue.close(0)
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
        return CheckResult("provider", False, f"{name}: not available ({info.error or 'check'})")
    return CheckResult("provider", True, f"{name} available")


CHECKS: list[Callable[[Settings], CheckResult]] = [
    check_home_writable,
    check_sqlite,
    check_memory_files,
    check_memory_provider,
    check_llm,
    check_redis,
    check_platforms,
    check_telegram,
    check_discord,
    check_slack,
]

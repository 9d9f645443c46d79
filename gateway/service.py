"""``chorus gateway``: the long-running service.

All enabled platform adapters, the runner, the session reaper and one HTTP
server (health, readiness, metrics, and the adapters' webhook routes). SIGTERM
or SIGINT: stop taking messages, let running turns finish
(``gateway.shutdown_timeout``), end every session (reason ``shutdown``), drain
the queue, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from pydantic import SecretStr

from gateway.adapters.base import BaseAdapter
from gateway.config import Settings
from gateway.errors import ConfigError
from gateway.http import HTTPServer
from gateway.stack import open_stack

logger = logging.getLogger(__name__)

NO_PLATFORMS = (
    "no chat platform is enabled: set TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN or "
    "SLACK_BOT_TOKEN (see README, 'Connecting platforms'); to chat in this terminal, "
    "run `chorus console`"
)


def enabled_adapters(settings: Settings) -> list[BaseAdapter]:
    """Adapters for every platform whose token is configured."""
    adapters: list[BaseAdapter] = []
    token = settings.telegram.token
    if token is not None and token.get_secret_value():
        from gateway.adapters.telegram_adapter import TelegramAdapter

        adapters.append(TelegramAdapter(settings.telegram, vision=settings.llm.vision))
    if _secret(settings.discord.token):
        from gateway.adapters.discord_adapter import DiscordAdapter

        adapters.append(DiscordAdapter(settings.discord))
    slack = settings.slack
    if _secret(slack.bot_token) and _secret(slack.signing_secret):
        from gateway.adapters.slack_adapter import SlackAdapter

        adapters.append(SlackAdapter(slack))
    return adapters


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value() if value is not None else ""


async def serve(settings: Settings, adapters: list[BaseAdapter], stop: asyncio.Event) -> None:
    """Run until ``stop`` is set, then shut down in order."""
    stack = await open_stack(settings, adapters=adapters)
    http = HTTPServer(
        settings.gateway.http.host,
        settings.gateway.http.port,
        metrics=stack.metrics,
        readiness=stack.readiness,
    )
    for adapter in adapters:
        for method, path, handler in adapter.http_routes():
            http.add_route(method, path, handler)
    try:
        await stack.runner.start()
        await http.start()
        logger.info("gateway up: %s; http on %s", ", ".join(a.name for a in adapters), http.url)
        await stop.wait()
        logger.info("shutting down")
        await stack.runner.shutdown()
    finally:
        await http.stop()
        await stack.close()


async def run_gateway(settings: Settings, *, adapters: list[BaseAdapter] | None = None) -> int:
    chosen = enabled_adapters(settings) if adapters is None else adapters
    if not chosen:
        raise ConfigError(NO_PLATFORMS)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await serve(settings, chosen, stop)
    finally:
        for sig in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    return 0

"""``chorus gateway``: the long-running service.

All enabled platform adapters, the runner, the session reaper and one HTTP
server (health, readiness, metrics, and the adapters' webhook routes; with
``gateway.metrics.port`` the first three on a listener of their own). SIGTERM
or SIGINT: stop taking messages, let running turns finish
(``gateway.shutdown_timeout``), end every session (reason ``shutdown``), drain
the queue, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from gateway import logs
from gateway.adapters import BaseAdapter, PlatformContext, enable_hints
from gateway.adapters import enabled_adapters as build_enabled
from gateway.app._gateway_stack import GatewayStack
from gateway.app._settled import settle_process
from gateway.app._stack import open_stack
from gateway.config import Settings, require_private_home
from gateway.errors import ConfigError
from gateway.ops import HTTPServer, Metrics

logger = logging.getLogger(__name__)
status = logging.getLogger(logs.STATUS)

EXIT_RESERVE = 2.0
"""Seconds of ``gateway.shutdown_timeout`` (at most a fifth of it) kept for the process
to exit after the shutdown work: the whole stop stays within the timeout."""

FAILURE_CHECK_INTERVAL = 5.0
"""Seconds between two looks for a platform that failed after the start (its token)."""

NO_PLATFORMS = (
    "no chat platform is enabled: set {hints} (see README, 'Connecting platforms'); "
    "to chat in this terminal, run `chorus console`"
)


def enabled_adapters(settings: Settings) -> list[BaseAdapter]:
    """Adapters for every platform whose settings enable it (see ``gateway.adapters``)."""
    context = PlatformContext(vision=settings.llm.vision)
    return build_enabled(lambda spec: spec.section_of(settings), context)


async def serve(settings: Settings, adapters: list[BaseAdapter], stop: asyncio.Event) -> None:
    """Run until ``stop`` is set, then shut down in order."""
    metrics = Metrics(platforms=[adapter.name for adapter in adapters])
    # the database opens (and migrates after an upgrade: it may take minutes) while
    # /healthz already answers, so a slow migration is not taken for a dead process;
    # /readyz says "not started" until the stack is open
    opening = asyncio.create_task(open_stack(settings, adapters=adapters, metrics=metrics))

    async def readiness() -> dict[str, bool]:
        if not opening.done():
            return {"started": False}
        return await opening.result().readiness()

    def failures() -> dict[str, str]:
        if not opening.done() or opening.cancelled() or opening.exception() is not None:
            return {}
        return dict(opening.result().failures.failed)

    http_settings, metrics_settings = settings.gateway.http, settings.gateway.metrics
    http = HTTPServer(
        http_settings.host,
        http_settings.port,
        metrics=metrics,
        readiness=readiness,
        failures=failures,
        metrics_address=None
        if metrics_settings.port is None
        else (metrics_settings.host or http_settings.host, metrics_settings.port),
    )
    for adapter in adapters:
        for method, path, handler in adapter.http_routes():
            http.add_route(method, path, handler)
    try:
        await http.start()  # /healthz answers while the platforms are still connecting
        stack = await opening
    except BaseException:
        await http.stop()
        await _abandon(opening)
        raise
    loop = asyncio.get_running_loop()
    deadline: float | None = None
    fatal: list[str] = []
    watch: asyncio.Task[None] | None = None
    try:
        await stack.start()
        settle_process()  # start-up's objects out of the collector's way
        fatal.extend(filter(None, [stack.failures.fatal(adapters)]))
        if not fatal:
            status.info("gateway up: %s; %s; HTTP on %s", *_up(stack, adapters), http.url)
            watch = asyncio.create_task(_watch(stack, adapters, stop, fatal))
            await stop.wait()
        timeout = stack.settings.gateway.shutdown_timeout
        # the process still has to exit after the work below: that share is kept back
        deadline = loop.time() + timeout - min(EXIT_RESERVE, timeout * 0.2)
        status.info("shutting down (within %.0fs)", timeout)
        stack.stop_accepting()  # /readyz fails from now on
        await stack.runner.shutdown(max(0.1, deadline - loop.time()))
    finally:
        if watch is not None:
            watch.cancel()
        await http.stop()
        await stack.close(None if deadline is None else max(0.5, deadline - loop.time()))
    if fatal:
        raise ConfigError(fatal[0])


def _up(stack: GatewayStack, adapters: list[BaseAdapter]) -> tuple[str, str]:
    """The platforms (each with how it connects, or that it failed) and the process mode."""
    platforms = []
    for adapter in adapters:
        how = "failed" if adapter.name in stack.failures.failed else adapter.mode()
        platforms.append(f"{adapter.name} ({how})" if how else adapter.name)
    router = stack.router
    mode = "one process" if router is None else f"replica {router.replica_id} of several"
    return ", ".join(platforms), mode


async def _watch(
    stack: GatewayStack, adapters: list[BaseAdapter], stop: asyncio.Event, fatal: list[str]
) -> None:
    """A platform that fails after the start (Discord closing with 4004) is reported; it
    stops the gateway when ``gateway.require_all_platforms`` is on or none is left."""
    while not stop.is_set():
        await asyncio.sleep(FAILURE_CHECK_INTERVAL)
        reason = stack.failures.fatal(adapters)
        if reason is not None:
            fatal.append(reason)
            stop.set()


async def _abandon(opening: asyncio.Task[GatewayStack]) -> None:
    """Stop opening the stack; close it if it opened all the same."""
    opening.cancel()
    try:
        stack = await opening
    except (Exception, asyncio.CancelledError):
        return
    await stack.close(None)


async def run_gateway(settings: Settings, *, adapters: list[BaseAdapter] | None = None) -> int:
    require_private_home(settings.home)
    chosen = enabled_adapters(settings) if adapters is None else adapters
    if not chosen:
        raise ConfigError(NO_PLATFORMS.format(hints=enable_hints()))
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

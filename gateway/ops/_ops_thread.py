"""``/metrics`` and ``/healthz`` for a process without an event loop (``chorus worker``).

The same aiohttp server as the gateway's (``_http``: quiet about requests it cannot
parse, JSON for unknown paths), on an event loop of its own in a daemon thread:

- ``GET /healthz`` — 200 ``{"status": "ok"}`` while ``healthy()`` says so, else 503
  ``{"status": "unavailable"}``; a change is logged once;
- ``GET /metrics`` — the Prometheus text exposition of ``render()``, built off the
  loop (it may ask Redis), so a slow scrape never holds a health probe up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from aiohttp import web

from gateway.ops._http import _bound_port, _json_errors, _serve, _url

__all__ = ["OpsThread"]

logger = logging.getLogger(__name__)

START_TIMEOUT = 10.0
"""Seconds ``start()`` waits for the listener to be bound."""


class OpsThread:
    """Serves ``/metrics`` and ``/healthz`` on ``host:port`` from a thread of its own."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        render: Callable[[], tuple[bytes, str]],
        healthy: Callable[[], bool],
    ) -> None:
        self._host = host
        self._port = port
        self._render = render
        self._healthy = healthy
        self._was_healthy: bool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._bound = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> None:
        """Bind and serve; raises OSError when the address is unavailable."""
        self._thread = threading.Thread(target=self._run, name="chorus-metrics", daemon=True)
        self._thread.start()
        if not self._bound.wait(START_TIMEOUT):
            raise OSError(f"the metrics listener on {self.url} did not start")
        if self._error is not None:
            raise self._error
        logger.info("metrics and health on %s", self.url)

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT)
        self._loop = self._thread = None

    @property
    def port(self) -> int:
        return _bound_port(self._runner, self._port)

    @property
    def url(self) -> str:
        return _url(self._host, self.port)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        app = web.Application(middlewares=[_json_errors])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        try:
            self._runner = loop.run_until_complete(_serve(app, self._host, self._port))
        except BaseException as exc:
            self._error = exc
            self._bound.set()
            loop.close()
            return
        self._loop = loop
        self._bound.set()
        try:
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
        finally:
            loop.close()

    async def _healthz(self, request: web.Request) -> web.Response:
        healthy = self._healthy()
        if healthy != self._was_healthy:
            self._was_healthy = healthy
            if healthy:
                logger.info("worker is healthy")
            else:
                logger.warning("worker is not healthy: its loop is not running or Redis is away")
        if healthy:
            return web.json_response({"status": "ok"})
        return web.json_response({"status": "unavailable"}, status=503)

    async def _metrics(self, request: web.Request) -> web.Response:
        body, content_type = await asyncio.to_thread(self._render)
        return web.Response(body=body, headers={"Content-Type": content_type})

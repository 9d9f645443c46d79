"""The gateway's HTTP server: probes, Prometheus metrics and platform webhooks.

It runs on the gateway's own event loop (``web.AppRunner`` + ``web.TCPSite``).

- ``GET /healthz`` — 200 while the process and its event loop are alive.
- ``GET /readyz`` — 200 when every readiness check passes, else 503; the body
  names each check. A check that raises or exceeds the timeout is not ready.
  Platforms that failed for good (a rejected token) are listed under ``failed``
  with the reason, outside the checks: the others keep serving.
- ``GET /metrics`` — the Prometheus text exposition of :class:`Metrics`.

With a metrics address (``gateway.metrics.port``) the three routes above are served
by a listener of their own on that address only, and the webhook listener answers
404 for them: a load balancer in front of the webhooks cannot reach them.

Adapters mount their webhooks (Slack events, Telegram updates) with
:meth:`HTTPServer.add_route` before the server starts. Request bodies, query
strings and error texts are never logged or echoed back; that includes a
request aiohttp cannot parse (a too-long request line or header, a bad status
line): it gets a plain JSON 400 and at most one WARNING line a minute naming
only the kind of error, where aiohttp would quote the request's first bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.typedefs import Handler

from gateway.ops._metrics import Metrics

logger = logging.getLogger(__name__)

READINESS_TIMEOUT = 5.0
"""Seconds one readiness evaluation may take before it counts as not ready."""

SHUTDOWN_TIMEOUT = 5.0
"""Seconds ``stop()`` waits for requests in flight before closing connections."""

UNREADABLE_LOG_INTERVAL = 60.0
"""Seconds between two log lines about requests that could not be parsed."""

STARTING_CHECK = "started"
"""The one check a gateway still opening its stack reports (False)."""
Readiness = Callable[[], Awaitable[dict[str, bool]]]
"""Returns check name -> whether that dependency is usable right now."""
STARTING = f"failing checks: {STARTING_CHECK}"
Failures = Callable[[], dict[str, str]]
"""Returns platform -> why it failed for good and what to fix (``gateway.app``)."""


def _no_failures() -> dict[str, str]:
    return {}


class _AccessLogger(AbstractAccessLogger):
    """One DEBUG line per request: method, route pattern (never the raw path), status."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        route = "-"
        if isinstance(request, web.Request):
            # a request that could not be parsed never got a route: aiohttp asserts
            with contextlib.suppress(AssertionError, AttributeError):
                resource = request.match_info.route.resource
                if resource is not None:
                    route = resource.canonical
        self.logger.debug("%s %s -> %d in %.3fs", request.method, route, response.status, time)

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.DEBUG)


class _Unreadable:
    """Counts unparseable requests; says when the next log line about them is due."""

    def __init__(self) -> None:
        self._last: float | None = None
        self.missed = 0

    def note(self, kind: str, status: int) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last < UNREADABLE_LOG_INTERVAL:
            self.missed += 1
            return
        self._last = now
        more, self.missed = self.missed, 0
        logger.warning(
            "HTTP: refused a request that could not be parsed (%s, %d)%s",
            kind,
            status,
            f"; {more} more since the last such line" if more else "",
        )


def _quiet_runner(app: web.Application, **kwargs: Any) -> web.AppRunner:
    """An ``AppRunner`` whose connections refuse a request they cannot parse without
    quoting it: aiohttp would put the first ~100 bytes of the offending line (a query
    string, a header value) into the 400 body and an ERROR traceback."""
    unreadable = _Unreadable()

    class QuietRequestHandler(web.RequestHandler):
        __slots__ = ()

        def handle_error(
            self,
            request: web.BaseRequest,
            status: int = 500,
            exc: BaseException | None = None,
            message: str | None = None,
        ) -> web.StreamResponse:
            if status >= 500:
                return super().handle_error(request, status, exc, message)
            unreadable.note(type(exc).__name__ if exc is not None else "-", status)
            if request.writer.output_size > 0:
                raise ConnectionError("a response was already sent; the connection is dropped")
            response = web.json_response({"error": "bad request"}, status=status)
            response.force_close()
            return response

    class QuietServer(web.Server):
        def __call__(self) -> web.RequestHandler:
            handler = super().__call__()
            handler.__class__ = QuietRequestHandler  # same slots: only handle_error differs
            return handler

    class Runner(web.AppRunner):
        async def _make_server(self) -> web.Server:
            server = await super()._make_server()
            server.__class__ = QuietServer  # only the connections it makes differ
            return server

    return Runner(app, **kwargs)


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Unknown paths and methods answer in JSON, like every other route."""
    try:
        return await handler(request)
    except web.HTTPMethodNotAllowed as exc:
        return web.json_response(
            {"error": "method not allowed"},
            status=exc.status,
            headers={"Allow": ", ".join(sorted(exc.allowed_methods))},
        )
    except web.HTTPNotFound:
        return web.json_response({"error": "not found"}, status=404)


async def _serve(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = _quiet_runner(
        app,
        access_log_class=_AccessLogger,
        access_log=logger,
        shutdown_timeout=SHUTDOWN_TIMEOUT,
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def _bound_port(runner: web.AppRunner | None, asked: int) -> int:
    if runner is not None:
        for address in runner.addresses:
            if isinstance(address, tuple):
                return int(address[1])
    return asked


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class HTTPServer:
    """Serves any webhook routes on ``host:port``, and the probes and ``/metrics`` there
    too or, given ``metrics_address``, on that ``(host, port)`` only."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        metrics: Metrics,
        readiness: Readiness,
        readiness_timeout: float = READINESS_TIMEOUT,
        metrics_address: tuple[str, int] | None = None,
        failures: Failures = _no_failures,
    ) -> None:
        self._host = host
        self._failures = failures
        self._port = port
        self._metrics_address = metrics_address
        self._metrics = metrics
        self._readiness = readiness
        self._readiness_timeout = readiness_timeout
        self._was_ready: bool | None = None
        self._app = web.Application(middlewares=[_json_errors])
        ops = self._app if metrics_address is None else web.Application(middlewares=[_json_errors])
        ops.router.add_get("/healthz", self._healthz)
        ops.router.add_get("/readyz", self._readyz)
        ops.router.add_get("/metrics", self._metrics_route)
        self._ops_app = ops
        self._runner: web.AppRunner | None = None
        self._ops_runner: web.AppRunner | None = None
        self._started = False

    # -- lifecycle ---------------------------------------------------------------------

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        """Mount ``handler`` for ``method`` on ``path``; only before :meth:`start`."""
        if self._started:
            raise RuntimeError(f"cannot add route {method} {path}: the HTTP server has started")
        self._app.router.add_route(method, path, handler)

    async def start(self) -> None:
        """Bind and start serving; raises OSError when an address is unavailable."""
        if self._started:
            raise RuntimeError("the HTTP server was already started")
        self._started = True
        self._runner = await _serve(self._app, self._host, self._port)
        if self._metrics_address is not None:
            try:
                self._ops_runner = await _serve(self._ops_app, *self._metrics_address)
            except BaseException:
                await self.stop()
                raise
            logger.info(
                "HTTP server listening on %s (webhooks) and %s (metrics and probes)",
                self.url,
                self.metrics_url,
            )
        else:
            logger.info("HTTP server listening on %s", self.url)

    async def stop(self) -> None:
        """Stop serving; calling it again, or before start, does nothing."""
        runners = [r for r in (self._runner, self._ops_runner) if r is not None]
        self._runner = self._ops_runner = None
        if not runners:
            return
        for runner in runners:
            await runner.cleanup()
        logger.info("HTTP server stopped")

    @property
    def port(self) -> int:
        """The webhooks' bound port once started (the real one when 0 was asked for)."""
        return _bound_port(self._runner, self._port)

    @property
    def url(self) -> str:
        return _url(self._host, self.port)

    @property
    def metrics_port(self) -> int:
        """Where ``/metrics`` and the probes answer: :attr:`port` without a metrics address."""
        if self._metrics_address is None:
            return self.port
        return _bound_port(self._ops_runner, self._metrics_address[1])

    @property
    def metrics_url(self) -> str:
        host = self._host if self._metrics_address is None else self._metrics_address[0]
        return _url(host, self.metrics_port)

    # -- routes ------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, request: web.Request) -> web.Response:
        checks: dict[str, bool] = {}
        body: dict[str, Any]
        try:
            async with asyncio.timeout(self._readiness_timeout):
                checks = {name: bool(ok) for name, ok in (await self._readiness()).items()}
        except TimeoutError:
            self._note_readiness(False, f"checks timed out after {self._readiness_timeout:g}s")
            body = {"ready": False, "checks": checks, "error": "timeout"}
        except Exception as exc:
            self._note_readiness(False, f"checks raised {type(exc).__name__}")
            body = {"ready": False, "checks": checks, "error": "check failed"}
        else:
            ready = all(checks.values())
            failing = ", ".join(name for name, ok in checks.items() if not ok)
            self._note_readiness(ready, f"failing checks: {failing}")
            body = {"ready": ready, "checks": checks}
        failed = self._failures()
        if failed:
            body["failed"] = failed
        return web.json_response(body, status=200 if body["ready"] else 503)

    def _note_readiness(self, ready: bool, reason: str) -> None:
        """Log changes of readiness only, so frequent probes do not flood the log."""
        if ready == self._was_ready:
            return
        first = self._was_ready is None
        self._was_ready = ready
        if ready:
            logger.info("gateway is ready")
        elif first and reason == STARTING:  # probed while it starts: normal, no warning
            logger.info("gateway is not ready yet: %s", reason)
        else:
            logger.warning("gateway is not ready: %s", reason)

    async def _metrics_route(self, request: web.Request) -> web.Response:
        await self._metrics.refresh()
        body, content_type = self._metrics.render()
        return web.Response(body=body, headers={"Content-Type": content_type})

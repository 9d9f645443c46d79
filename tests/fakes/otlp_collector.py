"""An OTLP/HTTP trace receiver, as the OpenTelemetry protocol specifies it: ``POST
/v1/traces`` with an ``ExportTraceServiceRequest`` in protobuf, answered with an
``ExportTraceServiceResponse``; decoded with the official ``opentelemetry-proto``
package. Every body is kept as received, so a test can search the raw bytes too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["Collector", "attributes", "running_collector"]


@dataclass
class Collector:
    """An OTLP/HTTP trace receiver: every request body kept, every span decoded."""

    url: str = ""
    bodies: list[bytes] = field(default_factory=list)
    spans: list[Any] = field(default_factory=list)
    services: set[str] = field(default_factory=set)

    async def traces(self, request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        body = await request.read()
        self.bodies.append(body)
        export = ExportTraceServiceRequest.FromString(body)
        for resource_spans in export.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    self.services.add(attribute.value.string_value)
            for scope_spans in resource_spans.scope_spans:
                self.spans.extend(scope_spans.spans)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
            headers={"Connection": "close"},  # no idle connection outlives the test
        )

    def named(self, name: str) -> list[Any]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> Any:
        found = self.named(name)
        assert len(found) == 1, (name, sorted(s.name for s in self.spans))
        return found[0]

    @property
    def raw(self) -> bytes:
        return b"".join(self.bodies)

    async def wait_for(self, name: str, timeout: float = 30) -> Any:
        """The span called ``name`` once it has arrived (a test never hangs)."""
        deadline = time.monotonic() + timeout
        while not self.named(name):
            assert time.monotonic() < deadline, (name, sorted(s.name for s in self.spans))
            await asyncio.sleep(0.05)
        return self.one(name)


@contextlib.asynccontextmanager
async def running_collector() -> AsyncIterator[Collector]:
    """A collector listening on a free port of 127.0.0.1 (its ``url``) until the block ends."""
    received = Collector()
    app = web.Application()
    app.router.add_post("/v1/traces", received.traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    received.url = f"http://127.0.0.1:{port}"
    yield received
    await runner.cleanup()


def attributes(span: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in span.attributes}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None

"""The HTTP client under the ``openai`` client: the SDK's own aiohttp transport.

``openai.DefaultAioHttpClient`` is the SDK's ``httpx2`` client with ``aiohttp`` doing the
HTTP (the SDK's defaults for timeouts, connection limits and redirects; proxies from
the environment as ``httpx2`` finds them). Against a local endpoint a streamed chat
request reached its first line about 0.7 ms sooner than through ``httpx2``'s own
transport, with about half the client's CPU: aiohttp parses HTTP in C and writes a
small request's headers and body in one send.

``LLMHttpClient`` is that client, its aiohttp sessions made with ``agent.sending``'s
trace, so a turn still learns the moment its request has left.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import httpx2
import openai
from openai._vendor.httpx_aiohttp import AiohttpTransport

from agent import sending

__all__ = ["LLMHttpClient"]


class SentTransport(AiohttpTransport):
    """The SDK's aiohttp transport; its session reports each request as it is sent."""

    def get_client(self) -> aiohttp.ClientSession:
        most = self.limits.max_connections
        connector = aiohttp.TCPConnector(
            keepalive_timeout=self.limits.keepalive_expiry,
            ssl=self.ssl_context,
            local_addr=(self.local_address, 0) if self.local_address else None,
            limit=most if most is not None else 0,  # 0: no limit
        )
        return aiohttp.ClientSession(connector=connector, trace_configs=[sending.trace_config()])

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """The SDK transport's answer; but a connection that failed without a timeout
        (refused, reset, closed by the server) is a ``ConnectError``, not the
        ``ConnectTimeout`` its table makes of every aiohttp connection error (the
        ``openai`` client would report a refused connection as a timeout)."""
        try:
            return await super().handle_async_request(request)
        except httpx2.ConnectTimeout as exc:
            failure = exc.__cause__
            if isinstance(failure, aiohttp.ClientConnectionError) and not isinstance(
                failure, TimeoutError
            ):
                raise httpx2.ConnectError(str(failure), request=request) from failure
            raise


class LLMHttpClient(openai.DefaultAioHttpClient):
    """``openai.DefaultAioHttpClient`` whose transports are ``SentTransport``s, made as
    the SDK's client makes its own (a transport given by the caller is used as it is)."""

    def _init_transport(  # type: ignore[override]
        self, transport: httpx2.AsyncBaseTransport | None = None, **settings: Any
    ) -> httpx2.AsyncBaseTransport:
        if transport is not None:
            return transport
        return SentTransport(**_transport_settings(settings))

    def _init_proxy_transport(  # type: ignore[override]
        self, proxy: httpx2.Proxy, **settings: Any
    ) -> httpx2.AsyncBaseTransport:
        return SentTransport(proxy=proxy, **_transport_settings(settings))


def _transport_settings(settings: dict[str, Any]) -> dict[str, Any]:
    names = ("verify", "cert", "trust_env", "http1", "http2", "limits")
    return {name: settings[name] for name in names if name in settings}

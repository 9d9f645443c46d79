"""What chorus adds to the HTTP under the ``openai`` client (``agent.llm`` makes it).

The client speaks HTTP through the SDK's aiohttp transport
(``openai.DefaultAioHttpClient``: the SDK's ``httpx2`` client with aiohttp doing the
HTTP, the SDK's defaults for timeouts, connection limits and redirects, proxies
from the environment as ``httpx2`` finds them). Against a local endpoint a streamed
chat request reached its first line about 0.7 ms sooner than through ``httpx2``'s
own transport, with about half the client's CPU: aiohttp parses HTTP in C and
writes a small request's headers and body in one send. Two things are added here:

- ``session_maker``: the transport's aiohttp sessions, made as the SDK makes them,
  carry ``agent.sending``'s trace, so a turn still learns the moment its request
  has left;
- ``ConnectErrors``: a connection that failed without a timeout (refused, reset,
  closed by the server) is a ``ConnectError``, not the ``ConnectTimeout`` the SDK's
  table makes of every aiohttp connection error (the ``openai`` client would report
  a refused connection as a timeout).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

import aiohttp
import httpx2

from agent import sending

__all__ = ["ConnectErrors", "session_maker"]


def session_maker(
    limits: httpx2.Limits, ssl_context: ssl.SSLContext, local_address: str | None = None
) -> Callable[[], aiohttp.ClientSession]:
    """What makes the transport's session (on its first request, in the event loop)."""

    def session() -> aiohttp.ClientSession:
        most = limits.max_connections
        connector = aiohttp.TCPConnector(
            keepalive_timeout=limits.keepalive_expiry,
            ssl=ssl_context,
            local_addr=(local_address, 0) if local_address else None,
            limit=most if most is not None else 0,  # 0: no limit
        )
        return aiohttp.ClientSession(connector=connector, trace_configs=[sending.trace_config()])

    return session


class ConnectErrors(httpx2.AsyncBaseTransport):
    """``transport``, with a connection error that is not a timeout raised as one."""

    def __init__(self, transport: httpx2.AsyncBaseTransport) -> None:
        self.transport = transport

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.transport.handle_async_request(request)
        except httpx2.ConnectTimeout as exc:
            failure = exc.__cause__
            if isinstance(failure, aiohttp.ClientConnectionError) and not isinstance(
                failure, TimeoutError
            ):
                raise httpx2.ConnectError(str(failure), request=request) from failure
            raise

    async def aclose(self) -> None:
        await self.transport.aclose()

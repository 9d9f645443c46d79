"""``McpTools``: every configured MCP server's tools, as one ``ToolSource`` of the registry.

The model sees each server's tools as ``<server>__<tool>`` (``_names``), listed
from the servers that are up at the moment of the request; the list follows a
server's ``list_changed``, its crash and its restart. A call goes to its server
(one whose ``headers``/``env`` name a person's secret: over the calling person's
own connection, ``_personal``) and comes back as text for the model: the result
fenced as others' content and cut to the server's ``max_result_chars``, or an
error result that says what happened (timed out, server not running, server
stopped during the call, no credential of the person's). One server's trouble
never reaches a turn or another server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agent.tools.mcp._names import namespaced
from agent.tools.mcp._outcomes import ServerHealth, ToolCallFailed
from agent.tools.mcp.settings import McpServerSettings
from agent.tools.registry import function_schema, tool_error

if TYPE_CHECKING:
    from agent.tools.mcp._personal import PersonalConnections, Reveal, SecretLookup
    from agent.tools.mcp._server import McpServer

__all__ = ["OUTCOMES", "STARTUP_WAIT", "CallObserver", "McpTools"]

logger = logging.getLogger(__name__)

OUTCOMES = ("ok", "tool_error", "error", "timeout", "unavailable", "no_credential")
"""How a call ended, as counted: a result, an error the tool reported, a failed call,
no answer in time, a server not running, a person without the secret the server needs."""

STARTUP_WAIT = 10.0
"""Seconds the gateway waits at start for its servers to be up (or to have failed once);
a slower one comes up meanwhile, its tools offered from then on."""

CallObserver = Callable[[str, str], None]
"""Told (server, outcome) after every call."""

_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class McpTools:
    """The MCP servers of ``tools.mcp_servers`` (the enabled ones)."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        observe: CallObserver | None = None,
        errlog: Any = None,
        secrets: SecretLookup | None = None,
        reveal: Reveal = lambda value: None,
        idle_seconds: float = 300.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        enabled = {name: conf for name, conf in servers.items() if conf.enabled}
        self.servers: dict[str, McpServer] = {}
        self.personal: dict[str, PersonalConnections] = {}
        if enabled:  # the SDK (``mcp``) is imported only when a server is configured
            from agent.tools.mcp._personal import PersonalConnections
            from agent.tools.mcp._server import McpServer

            self.servers = {  # a per-person server's own lists its tools, with no one's secret
                name: McpServer(
                    name, conf.without_person(), on_tools_changed=self._relist, errlog=errlog
                )
                for name, conf in enabled.items()
            }
            self.personal = {
                name: PersonalConnections(
                    name,
                    conf,
                    secrets=secrets,
                    reveal=reveal,
                    idle_seconds=idle_seconds,
                    now=now,
                    errlog=errlog,
                )
                for name, conf in enabled.items()
                if conf.per_person
            }
            """The servers whose calls each person makes with their own secrets."""
        self._observe = observe
        self._routes: dict[str, tuple[McpServer, str]] = {}
        self._schemas: list[dict[str, Any]] = []

    def start(self) -> None:
        """Start every server (in the background: a slow one holds nothing up)."""
        for server in self.servers.values():
            server.start()
        for personal in self.personal.values():
            personal.start()

    async def started(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until every server is up or has failed once."""
        waits = [server.tried() for server in self.servers.values()]
        if waits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), timeout)

    async def stop(self) -> None:
        await asyncio.gather(
            *(server.stop() for server in self.servers.values()),
            *(personal.stop() for personal in self.personal.values()),
        )

    def health(self) -> list[ServerHealth]:
        return [server.health() for server in self.servers.values()]

    # -- ToolSource ------------------------------------------------------------------------

    def schemas(self) -> list[dict[str, Any]]:
        return list(self._schemas)

    def has(self, name: str) -> bool:
        return name in self._routes

    async def call(self, name: str, arguments: dict[str, Any], person: str | None = None) -> str:
        """``person`` (``platform:id``) is whose call it is: a server that takes a person's
        secrets is called with theirs."""
        route = self._routes.get(name)
        if route is None:
            return tool_error(f"the tool {name} is not available now")
        server, tool = route
        personal = self.personal.get(server.name)
        try:
            if personal is not None:
                result = await personal.call(person, tool, arguments)
            else:
                result = await server.call(tool, arguments)
        except ToolCallFailed as exc:
            logger.warning("tool %s: %s", name, exc.outcome)
            self._count(server.name, exc.outcome)
            return tool_error(str(exc))
        self._count(server.name, "tool_error" if result.isError else "ok")
        from agent.tools.mcp._results import render_result

        return render_result(name, result, server.settings.max_result_chars)

    def _count(self, server: str, outcome: str) -> None:
        if self._observe is not None:
            try:
                self._observe(server, outcome)
            except Exception:
                logger.exception("counting a tool call failed")

    def _relist(self) -> None:
        """Rebuild the names the model sees, from the servers' current lists."""
        routes: dict[str, tuple[McpServer, str]] = {}
        schemas: list[dict[str, Any]] = []
        taken: set[str] = set()
        for server in self.servers.values():
            listed = {tool.name: tool for tool in server.tools}
            for name, original in namespaced(server.name, listed, taken).items():
                tool = listed[original]
                routes[name] = (server, original)
                description = tool.description or tool.title or original
                parameters = tool.inputSchema or _EMPTY_PARAMETERS
                schemas.append(function_schema(name, description, parameters))
        self._routes, self._schemas = routes, schemas

"""A real MCP server, written with the official SDK (``mcp.server.fastmcp``), run as a
process of its own: ``python -m tests.fakes.mcp_server STATE_DIR [--http PORT]``.

It writes what a test checks into STATE_DIR: ``pid`` (its process id, one line per
start) and ``calls.jsonl`` (each tool call it received, with the ``Authorization``
header of the HTTP request when it came over HTTP, and the ``CHORUS_TEST_TOKEN``
variable and process id when it was started with that variable).

Tools: ``echo(text)``; ``big(chars)`` (that many characters); ``block()`` (never
answers: a test kills the process, or the call times out); ``weird.name()``
(a name that is not a valid function name); ``grow()`` adds the tool ``late`` and
tells the client its list changed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP


def build(state: Path, port: int) -> FastMCP:
    server = FastMCP("chorus-test", host="127.0.0.1", port=port)

    def record(tool: str, ctx: Context[Any, Any, Any] | None, **arguments: Any) -> None:
        request = ctx.request_context.request if ctx is not None else None
        headers = dict(request.headers) if request is not None else {}  # type: ignore[attr-defined]
        token = headers.get("authorization")
        entry: dict[str, Any] = {"tool": tool, "arguments": arguments, "authorization": token}
        if "CHORUS_TEST_TOKEN" in os.environ:  # a process started with a person's token
            entry |= {"env_token": os.environ["CHORUS_TEST_TOKEN"], "pid": os.getpid()}
        with (state / "calls.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    @server.tool(description="Say the text back.")
    def echo(text: str, ctx: Context[Any, Any, Any]) -> str:  # type: ignore[type-arg]
        record("echo", ctx, text=text)
        return f"echo: {text}"

    @server.tool(description="A long text.")
    def big(chars: int, ctx: Context[Any, Any, Any]) -> str:  # type: ignore[type-arg]
        record("big", ctx, chars=chars)
        return "x" * chars

    @server.tool(description="Never answers.")
    async def block(ctx: Context[Any, Any, Any]) -> str:  # type: ignore[type-arg]
        record("block", ctx)
        await asyncio.Event().wait()
        return "unreachable"

    def weird() -> str:
        return "weird"

    server.add_tool(weird, name="weird.name", description="A name with a dot.")

    @server.tool(description="Adds the tool late.")
    async def grow(ctx: Context[Any, Any, Any]) -> str:  # type: ignore[type-arg]
        record("grow", ctx)

        def late() -> str:
            return "late result"

        server.add_tool(late, name="late", description="Added while running.")
        await ctx.session.send_tool_list_changed()
        return "grown"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("state", type=Path)
    parser.add_argument("--http", type=int, default=None)
    args = parser.parse_args()
    args.state.mkdir(parents=True, exist_ok=True)
    with (args.state / "pid").open("a", encoding="utf-8") as out:
        out.write(f"{os.getpid()}\n")
    server = build(args.state, args.http or 0)
    server.run("streamable-http" if args.http else "stdio")


if __name__ == "__main__":
    main()

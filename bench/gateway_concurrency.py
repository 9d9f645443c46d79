"""Many sessions through the real runner against a slow fake LLM.

Run: uv run python bench/gateway_concurrency.py [sessions] [messages] [llm_delay_s]
Prints the wall time, what strictly serial handling would take, the ratio, and
the most LLM requests the fake endpoint saw in flight at once, and writes
``bench/results/gateway_concurrency.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.adapters import TestChatAdapter
from gateway.app import open_stack
from gateway.config import load_settings
from tests.fakes import FakeOpenAI, Reply


async def run(sessions: int, messages: int, delay: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home, FakeOpenAI() as server:
        server.responder(lambda body: Reply.of_text("ok", delay=delay))
        settings = load_settings(
            Path(home),
            {
                "CHORUS_HOME": home,
                "OPENAI_BASE_URL": server.base_url,
                "CHORUS_AUTH__POLICY": "open",
                "CHORUS_SESSIONS__HANDOFF": "false",
                "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1000",
            },
        )
        adapter = TestChatAdapter()
        stack = await open_stack(settings, adapters=[adapter])
        await stack.start()

        answered = {f"dm-{user}": asyncio.Queue[None]() for user in range(sessions)}

        async def route() -> None:
            """Hand each completed answer to the conversation waiting for it."""
            while True:
                answer = await adapter.pop(timeout=3600)
                answered[answer.chat_id].put_nowait(None)

        async def converse(user: int) -> None:
            for n in range(messages):
                await adapter.push(f"message {n}", user_id=str(user))
                await answered[f"dm-{user}"].get()

        router = asyncio.create_task(route())
        start = time.perf_counter()
        await asyncio.gather(*(converse(u) for u in range(sessions)))
        wall = time.perf_counter() - start
        router.cancel()
        await stack.runner.shutdown(30)
        await stack.close()
    serial = sessions * messages * delay
    print(f"{sessions} sessions x {messages} messages, LLM {delay * 1000:.0f} ms per answer")
    print(f"wall time     : {wall:7.2f} s")
    print(f"serial would be: {serial:7.2f} s  ({serial / wall:.1f}x faster)")
    print(f"max in flight : {server.in_flight_max} (cap {settings.sessions.max_concurrent_turns})")
    return {
        "sessions": sessions,
        "messages": messages,
        "llm_delay_s": delay,
        "wall_s": wall,
        "serial_s": serial,
        "speedup": serial / wall,
        "in_flight_max": server.in_flight_max,
        "max_concurrent_turns": settings.sessions.max_concurrent_turns,
    }


def save(report: dict[str, float]) -> None:
    out = (
        Path(os.environ.get("BENCH_RESULTS_DIR", Path(__file__).resolve().parent / "results"))
        / "gateway_concurrency.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    sessions = int(args[0]) if args else 100
    messages = int(args[1]) if len(args) > 1 else 3
    delay = args[2] if len(args) > 2 else 0.1
    save(asyncio.run(run(sessions, messages, delay)))

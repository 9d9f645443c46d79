"""What tracing costs a turn: reply time and process CPU per message, tracing off and on.

Run: uv run python bench/tracing.py [--turns 40] [--rounds 3] [--pause 0.2]

One person writes to an instant fake LLM through the real runner (the in-memory
platform adapter, the in-process job queue), with no tool call, as in
``bench/sessions.py``; once without ``observability.otlp_endpoint`` and once with it
pointing at an OTLP/HTTP receiver in another process (it answers 200 and keeps
nothing), alternating ``--rounds`` times so both see the same machine. Figures:
the time from a message to its reply (p50) and the process CPU per message (the
SDK's export thread included), each off and on, and what tracing adds.

Goal (the performance issue's "no regression" list): tracing adds ≤ 1 ms p50 a message.
Writes ``bench/results/tracing.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sessions import ms, reply_times, stack_of  # noqa: E402
from tests.fakes import FakeOpenAI  # noqa: E402

GOAL_MS = 1.0

RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def one_round(turns: int, pause: float, env: dict[str, str]) -> tuple[list[float], float]:
    """Reply times of ``turns`` messages and the process CPU seconds per message."""
    with FakeOpenAI() as server:
        server.responder(lambda body: "ok")
        async with stack_of(server, **env) as (_, adapter):
            await reply_times(adapter, "warm", 3, 0)
            cpu = time.process_time()
            times = await reply_times(adapter, "1", turns, pause)
            used = (time.process_time() - cpu) / turns
    return times, used


async def run(port: int, turns: int, rounds: int, pause: float) -> dict[str, Any]:
    on_env = {"CHORUS_OBSERVABILITY__OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    times: dict[str, list[float]] = {"off": [], "on": []}
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    for n in range(rounds):
        for mode, env in (("off", {}), ("on", on_env)):
            print(f"round {n + 1}/{rounds}, tracing {mode}…", file=sys.stderr)
            replies, used = await one_round(turns, pause, env)
            times[mode].extend(replies)
            cpu[mode].append(used)
    off, on = ms(times["off"], 0.5), ms(times["on"], 0.5)
    cpu_off = round(sorted(cpu["off"])[len(cpu["off"]) // 2] * 1000, 2)
    cpu_on = round(sorted(cpu["on"])[len(cpu["on"]) // 2] * 1000, 2)
    added = round(on - off, 2)
    return {
        "turns": turns * rounds,
        "off_p50_ms": off,
        "on_p50_ms": on,
        "added_p50_ms": added,
        "off_cpu_ms_per_message": cpu_off,
        "on_cpu_ms_per_message": cpu_on,
        "added_cpu_ms_per_message": round(cpu_on - cpu_off, 2),
        "goal_ms": GOAL_MS,
        "met": added <= GOAL_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.2)
    args = parser.parse_args()
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    try:
        report = asyncio.run(run(port, args.turns, args.rounds, args.pause))
    finally:
        receiver.terminate()
        receiver.wait(10)
    print("  ".join(f"{k}={v}" for k, v in report.items()))
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / "tracing.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

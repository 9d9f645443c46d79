"""What a session costs: reply overhead, memory, prompt-prefix stability, a slow provider.

Run: uv run python bench/sessions.py [--turns 20] [--sessions 200,2000]

All in one process through the real runner (the in-memory platform adapter, the
fake OpenAI server, the in-process job queue):

- overhead: one person writing at a human pace (the next message 1.1 s after each
  reply) to an instant LLM: time from the message to its reply (its first words in
  the chat), p50/p90/max, to its final text delivered (p50), and
  the process CPU per message (its settle and background work included; the fake
  LLM runs in this process too); with the per-step trace of each message
  (``agent.tracing.steps``): the p50 of each step, from the message to the update
  read, its inbox record, … to the delivery of the answer, and its settle after it;
- memory: RSS growth per live session after N people each had one turn;
- prefix: over 30 turns with a memory write every third, the share of LLM requests
  whose system prompt is byte-identical to the one before (what prompt caching needs);
- slow provider: a memory provider whose ``sync_turn`` sleeps 5 s; what it adds to
  the reply time (p50), against no provider.

Writes ``bench/results/sessions.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.tracing import steps  # noqa: E402
from bench._llm_process import RemoteLLM, llm_process  # noqa: E402
from gateway.adapters import TestChatAdapter  # noqa: E402
from gateway.app import open_stack, settle_process  # noqa: E402
from gateway.config import load_settings  # noqa: E402
from tests.fakes import FakeOpenAI  # noqa: E402

SLOW_PROVIDER = textwrap.dedent(
    """
    import time
    from memory.providers import MemoryProvider

    class SlowProvider(MemoryProvider):
        name = "slow"
        def is_available(self): return True
        def initialize(self, session_id, **kwargs): pass
        def get_tool_schemas(self): return []
        def sync_turn(self, user_content, assistant_content, **kwargs): time.sleep(5)
    """
)


@asynccontextmanager
async def stack_of(
    server: FakeOpenAI | RemoteLLM, **env: str
) -> AsyncIterator[tuple[Any, TestChatAdapter]]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        if env.get("CHORUS_MEMORY__PROVIDER") == "slow":
            (home / "plugins" / "slow").mkdir(parents=True)
            (home / "plugins" / "slow" / "__init__.py").write_text(SLOW_PROVIDER)
        settings = load_settings(
            home,
            {
                "CHORUS_HOME": str(home),
                "OPENAI_BASE_URL": server.base_url,
                "CHORUS_AUTH__POLICY": "open",
                "CHORUS_AUTH__RATE_LIMIT_PER_MINUTE": "0",
                "CHORUS_SESSIONS__HANDOFF": "false",
                "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1000",
                "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
                **env,
            },
        )
        adapter = TestChatAdapter()
        stack = await open_stack(settings, adapters=[adapter])
        await stack.start()
        settle_process()  # as `chorus gateway` does once started
        try:
            yield stack, adapter
        finally:
            await stack.runner.shutdown(30)
            await stack.close()


async def reply_times(adapter: TestChatAdapter, user: str, turns: int, pause: float) -> list[float]:
    """Seconds from each message to its reply, one person at ``pause`` between them."""
    chat = f"dm-{user}"
    times: list[float] = []
    for n in range(turns):
        start = time.perf_counter()
        await adapter.push(f"message {n}", user_id=user)
        await replied(adapter, chat, n)
        times.append(time.perf_counter() - start)
        await asyncio.sleep(pause)
    return times


async def replied(adapter: TestChatAdapter, chat: str, n: int, timeout: float = 60) -> None:
    """Until the chat shows more than ``n`` messages; a bench run never hangs. Woken by
    each message the adapter sends (no polling: a poll would share the event loop with
    the turn it times, and see its reply up to a poll's interval late)."""
    deadline = time.monotonic() + timeout
    while True:
        adapter.arrived.clear()
        if len(adapter.texts(chat)) > n:
            return
        try:
            await asyncio.wait_for(adapter.arrived.wait(), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            raise SystemExit(f"no reply {n + 1} in {chat} after {timeout:.0f}s") from None


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


Marks = list[tuple[str, int]]


def step_times(start_ns: int, marks: Marks) -> dict[str, float]:
    """Seconds each step of one message took: from the step marked before it (the
    message itself for the first) to its own first mark after that one. A mark of
    other work in the same moment (the end of another turn, seen in a trace of 40
    messages between this one's access and session steps) that comes before the
    step it would follow is passed over, so no step comes out negative."""
    spent: dict[str, float] = {}
    before = start_ns
    for name in steps.STEPS:
        at = next((at for step, at in marks if step == name and at >= before), None)
        if at is not None:
            spent[name] = (at - before) / 1e9
            before = at
    return spent


@contextmanager
def instant_llm(separate: bool) -> Iterator[FakeOpenAI | RemoteLLM]:
    """The fake LLM answering "ok": a thread of this process, or (``separate``) a process
    of its own, as a remote model is (its work then is not in this process's CPU)."""
    if separate:
        with llm_process() as remote:
            yield remote
        return
    with FakeOpenAI() as server:
        server.responder(lambda body: "ok")
        yield server


async def overhead(turns: int, pause: float = 1.1, llm_process: bool = False) -> dict[str, Any]:
    """Reply times at a human pace, the CPU per message and the p50 and p90 of each step."""
    marks: Marks = []
    times: list[float] = []
    cpu: list[float] = []
    delivered: list[float] = []
    by_step: dict[str, list[float]] = {name: [] for name in steps.STEPS}
    each: list[dict[str, float]] = []  # each message's steps, to read the slow ones
    with instant_llm(llm_process) as server:
        async with stack_of(server) as (_, adapter):
            await reply_times(adapter, "warm", 2, 0)
            steps.watch(lambda name, at: marks.append((name, at)))
            try:
                for n in range(turns):
                    marks.clear()
                    used, start = time.process_time(), time.perf_counter_ns()
                    await adapter.push(f"message {n}", user_id="1")
                    await replied(adapter, "dm-1", n)
                    times.append((time.perf_counter_ns() - start) / 1e9)
                    await asyncio.sleep(pause)  # its settle and background work are done
                    cpu.append(time.process_time() - used)
                    spent = step_times(start, marks)
                    each.append(spent)
                    for name, seconds in spent.items():
                        by_step[name].append(seconds)
                    if "delivery" in spent:  # the answer's final text is in the chat
                        delivered.append(sum(v for k, v in spent.items() if k != "settle"))
            finally:
                steps.watch(None)
    return {
        "llm": "separate process" if llm_process else "in this process",
        "turns": turns,
        "p50_ms": ms(times, 0.5),
        "p90_ms": ms(times, 0.9),
        "max_ms": ms(times, 1.0),
        "delivered_p50_ms": ms(delivered, 0.5) if delivered else None,
        "cpu_ms_per_message": ms(cpu, 0.5),
        "cpu_p90_ms_per_message": ms(cpu, 0.9),
        "steps_p50_ms": {name: ms(spent, 0.5) for name, spent in by_step.items() if spent},
        "steps_p90_ms": {name: ms(spent, 0.9) for name, spent in by_step.items() if spent},
        "slow_messages_steps_ms": slow_steps(times, each),
    }


def slow_steps(times: list[float], each: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each step over the slowest tenth of the messages (reply time at or
    above its p90): which steps make a slow message slow."""
    cut = sorted(times)[min(len(times) - 1, int(0.9 * len(times)))]
    slow = [spent for took, spent in zip(times, each, strict=True) if took >= cut]
    names = [name for name in steps.STEPS if any(name in spent for spent in slow)]
    return {
        name: round(1000 * sum(s.get(name, 0.0) for s in slow) / len(slow), 2) for name in names
    }


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def memory(sessions: int) -> dict[str, float]:
    with FakeOpenAI() as server:
        server.responder(lambda body: "ok")
        async with stack_of(server, CHORUS_SESSIONS__MAX_LIVE=str(sessions + 10)) as (
            stack,
            adapter,
        ):
            await reply_times(adapter, "warm", 3, 0)
            before = rss_kb()
            for start in range(0, sessions, 100):
                users = range(start, min(sessions, start + 100))
                await asyncio.gather(*(reply_times(adapter, f"u{u}", 1, 0) for u in users))
            after = rss_kb()
            live = stack.runner.sessions.live_agents
    return {
        "sessions": sessions,
        "live_agents": live,
        "kb_per_session": round((after - before) / sessions, 1),
    }


async def prefix(turns: int = 30) -> dict[str, float]:
    with FakeOpenAI() as server:
        async with stack_of(server) as (_, adapter):
            for n in range(turns):
                if n % 3 == 2:
                    fact = {"action": "add", "target": "user", "content": f"Fact {n}"}
                    server.tool_call("memory", fact)
                server.reply(f"answer {n}")
                await adapter.push(f"message {n}", user_id="1")
                await replied(adapter, "dm-1", n)
            prompts = [r["messages"][0]["content"] for r in server.requests]
    same = sum(1 for a, b in itertools.pairwise(prompts) if a == b)
    share = round(100 * same / (len(prompts) - 1), 1)
    return {"requests": len(prompts), "identical_to_previous_pct": share}


async def slow_provider(turns: int) -> dict[str, float]:
    results: dict[str, float] = {}
    for label, env in (("none", {}), ("slow", {"CHORUS_MEMORY__PROVIDER": "slow"})):
        with FakeOpenAI() as server:
            server.responder(lambda body: "ok")
            async with stack_of(server, **env) as (_, adapter):
                await reply_times(adapter, "warm", 1, 0)
                times = await reply_times(adapter, "1", turns, 0.05)
        results[f"{label}_p50_ms"] = ms(times, 0.5)
    results["added_p50_ms"] = round(results["slow_p50_ms"] - results["none_p50_ms"], 2)
    return results


async def run(
    turns: int, sizes: list[int], only_overhead: bool = False, llm_process: bool = False
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    print("overhead…", file=sys.stderr)
    report["overhead"] = await overhead(turns, llm_process=llm_process)
    if only_overhead:
        return report
    print("prefix…", file=sys.stderr)
    report["prefix"] = await prefix()
    print("slow provider…", file=sys.stderr)
    report["slow_provider"] = await slow_provider(min(turns, 10))
    report["memory"] = []
    for n in sizes:
        print(f"memory at {n} sessions…", file=sys.stderr)
        report["memory"].append(await memory(n))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--sessions", default="200,2000")
    parser.add_argument(
        "--overhead-only",
        action="store_true",
        help="only the reply overhead and its per-step trace (written to sessions-overhead.json)",
    )
    parser.add_argument(
        "--llm-process",
        action="store_true",
        help="the overhead's fake LLM in a process of its own (default: a thread of this one)",
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.sessions.split(",")]
    report = asyncio.run(run(args.turns, sizes, args.overhead_only, args.llm_process))
    for section, figures in report.items():
        for entry in figures if isinstance(figures, list) else [figures]:
            flat = {k: v for k, v in entry.items() if not isinstance(v, dict)}
            print(f"{section:<14} " + "  ".join(f"{k}={v}" for k, v in flat.items()))
    figures = report["overhead"]
    print("one message, each step (ms):     p50      p90  slowest 10% (mean)")
    for name, spent in figures["steps_p50_ms"].items():
        tail = figures["steps_p90_ms"][name]
        slow = figures["slow_messages_steps_ms"].get(name, 0.0)
        print(f"  {name:<28} {spent:>7.2f}  {tail:>7.2f}  {slow:>7.2f}")
    name = "sessions-overhead.json" if args.overhead_only else "sessions.json"
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / name
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

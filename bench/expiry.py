"""Session expiry: the reaper's tick with many open sessions, and many sessions ending at once.

Run: uv run python bench/expiry.py [--sessions 100000] [--ending 1000] [--turns 6]

In one process, the real stack as the tests build it (``open_stack`` with a
``FakeClock``, the in-memory platform adapter, a real SessionDB in a temp
CHORUS_HOME, the in-process job queue, the fake OpenAI server as the LLM):

- tick: ``--sessions`` open sessions (last active over the past 4 hours) are in
  state.db when the gateway starts, so ``recover()`` hands them all to the reaper;
  none is due. What wakes the reaper most is a turn ending (the session's deadline
  is taken again), so a *tick* is one such wake-up run to the reaper's next wait:
  timed as the wall time of N wake-ups minus the same loop with the reaper stopped.
  Also timed: ``run_due()`` alone (the check for due sessions). Goal: ≤ 1 ms a tick.
- ending: ``--ending`` sessions of ``--turns`` turns each (enough for the memory
  flush at the default ``memory.flush_min_turns``), their agents in memory, all
  last active at one moment; the clock is moved past their idle deadline. Reported:
  seconds until the reaper had handed every one over, until every one was ended in
  SessionDB (flush and handoff summary by the LLM, providers' ``on_session_end``,
  end mark), per session, and the LLM requests it took.

Writes ``bench/results/expiry.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.adapters import TestChatAdapter  # noqa: E402
from gateway.app import GatewayStack, open_stack  # noqa: E402
from gateway.config import load_settings  # noqa: E402
from gateway.sessions import session_deadline  # noqa: E402
from memory.paths import ChorusPaths  # noqa: E402
from memory.transcripts import SessionDB  # noqa: E402
from tests.fakes import FakeClock, FakeOpenAI  # noqa: E402

START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp()
TICK_GOAL_MS = 1.0
WAKES = 2_000
"""Reaper wake-ups per timed round."""
ROUNDS = 5
SETTLE = 8
"""Event-loop turns given to each wake-up (the reaper needs about four)."""


async def _no_sleep(_: float) -> None:
    return None


def prepare(home: Path, sessions: int, turns: int, spread: float) -> None:
    """``sessions`` open sessions in state.db, last active over the ``spread`` seconds
    before START, each with ``turns`` user/assistant turns."""
    db = SessionDB(ChorusPaths(home).state_db)
    for n in range(sessions):
        at = START - spread * (n + 1) / sessions
        sid = f"s{n:06d}"
        db.create_session(
            sid,
            platform="testchat",
            user_key=f"memory:{n}",
            chat_id=f"dm-{n}",
            user_id=str(n),
            started_at=at - 60,
            is_direct=True,
        )
        for turn in range(turns):
            db.append_message(sid, "user", f"question {turn} of user {n}", timestamp=at - 1)
            db.append_message(sid, "assistant", f"answer {turn} for user {n}", timestamp=at)
    db.close()


@asynccontextmanager
async def gateway(home: Path, server: FakeOpenAI, clock: FakeClock) -> AsyncIterator[GatewayStack]:
    env = {
        "CHORUS_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "CHORUS_AUTH__POLICY": "open",
        "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
    }
    settings = load_settings(home, env)
    stack = await open_stack(
        settings, clock=clock, llm_sleep=_no_sleep, adapters=[TestChatAdapter()]
    )
    try:
        yield stack
    finally:  # no session is ended on the way out: the next start would do it
        await stack.runner.sessions.reaper.stop()
        await stack.close(30)


async def wake_rounds(stack: GatewayStack, clock: FakeClock, running: bool) -> float:
    """Seconds for WAKES wake-ups (a deadline taken again, as after a turn)."""
    manager = stack.runner.sessions
    reaper = manager.reaper
    if running:
        reaper.start()
    else:
        await reaper.stop()
    lives = manager.sessions[: min(WAKES, len(manager.sessions))]
    started = time.perf_counter()
    for n in range(WAKES):
        live = lives[n % len(lives)]
        live.last_active = clock.time()
        deadline, _ = session_deadline(live.started_at, live.last_active, manager.settings)
        reaper.schedule(live.session_id, deadline)
        for _ in range(SETTLE):
            await asyncio.sleep(0)
    return time.perf_counter() - started


async def tick(sessions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        print(f"writing {sessions:,} open sessions…", file=sys.stderr)
        prepare(home, sessions, 0, spread=3.9 * 3600)
        clock = FakeClock(START)
        async with gateway(home, server, clock) as stack:
            started = time.perf_counter()
            await stack.start()
            recover_s = time.perf_counter() - started
            manager = stack.runner.sessions
            reaper = manager.reaper
            if len(reaper) != sessions:
                raise SystemExit(f"the reaper holds {len(reaper)} sessions, not {sessions}")
            due_checks: list[float] = []
            for _ in range(1_000):
                begun = time.perf_counter()
                await reaper.run_due()
                due_checks.append(time.perf_counter() - begun)
            per_tick: list[float] = []
            for _ in range(ROUNDS):
                on = await wake_rounds(stack, clock, running=True)
                off = await wake_rounds(stack, clock, running=False)
                per_tick.append((on - off) / WAKES)
            ended = sessions - len(manager.sessions)
            if ended:
                raise SystemExit(f"{ended} session(s) ended although none was due")
    tick_ms = statistics.median(per_tick) * 1000
    return {
        "open_sessions": sessions,
        "recover_s": round(recover_s, 2),
        "tick_ms": round(tick_ms, 4),
        "tick_ms_rounds": [round(t * 1000, 4) for t in per_tick],
        "run_due_ms": round(statistics.median(due_checks) * 1000, 4),
        "goal_tick_ms": TICK_GOAL_MS,
        "met": tick_ms <= TICK_GOAL_MS,
    }


async def ending(count: int, turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        print(f"writing {count:,} sessions of {turns} turns…", file=sys.stderr)
        prepare(home, count, turns, spread=0)
        clock = FakeClock(START)
        async with gateway(home, server, clock) as stack:
            await stack.start()
            manager = stack.runner.sessions
            for live in manager.sessions:  # as if each had just had its turn here
                await manager.agent_for(live)
            live_agents = manager.live_agents
            idle_s = manager.settings.idle_minutes * 60
            db = stack.db.db
            requests_before = len(server.requests)
            print(f"ending {count:,} sessions at once…", file=sys.stderr)
            started = time.perf_counter()
            await clock.advance(idle_s + 1)
            handed_s = ended_s = None
            deadline = started + 600 + count
            while time.perf_counter() < deadline:
                if handed_s is None and not manager.sessions:
                    handed_s = time.perf_counter() - started
                if handed_s is not None and not db.find_open_sessions():
                    ended_s = time.perf_counter() - started
                    break
                await asyncio.sleep(0.02)
            records = db.list_sessions(limit=count + 10)
            reasons = sorted({r.end_reason or "" for r in records if r.ended_at})
            done = sum(1 for r in records if r.ended_at)
            requests = len(server.requests) - requests_before
    return {
        "sessions": count,
        "turns_each": turns,
        "live_agents": live_agents,
        "ended": done,
        "end_reasons": reasons,
        "handed_over_s": None if handed_s is None else round(handed_s, 3),
        "all_ended_s": None if ended_s is None else round(ended_s, 3),
        "ms_per_session": None if ended_s is None else round(ended_s * 1000 / count, 2),
        "llm_requests": requests,
    }


async def run(sessions: int, count: int, turns: int) -> dict[str, Any]:
    return {"tick": await tick(sessions), "ending": await ending(count, turns)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--ending", type=int, default=1_000)
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    report = asyncio.run(run(args.sessions, args.ending, args.turns))
    for section, figures in report.items():
        width = max(len(k) for k in figures)
        print(f"[{section}]")
        for key, value in figures.items():
            print(f"  {key:<{width}}  {value}")
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / "expiry.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

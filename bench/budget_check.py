"""The per-turn cost of the budget check: without Redis, and with it.

Run: uv run python bench/budget_check.py [--turns 2000] [--people 50]

One turn's budget work, as the gateway does it for a turn with one LLM call:
``check()`` before the turn starts, ``reserve()`` before the call,
``settle()`` after it and ``notice()`` (the heads-up near a limit) after the
answer (the ledger row is written by the meter's background writer, off the
turn's path; the figures include the event loop's share of it).
The meter is the real ``BudgetMeter`` over a real ledger in a temp CHORUS_HOME:
once with the process's own counters, once with ``redis.url`` pointing at a
real redis-server on this machine (skipped when none is installed). Each
person has limits, so every check reads and compares their counters. With
Redis it also prints the round trips a turn: the scripts the server ran
(``INFO commandstats``), which a loaded machine does not change.

Goal (issue #32, README, Performance): the budget work adds at most 1 ms (p50) to
a message, with Redis or without.
Writes ``bench/results/budget_check.json``.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.usage import Charge  # noqa: E402
from gateway.budgets import open_meter  # noqa: E402
from gateway.config import load_settings  # noqa: E402
from tests.fakes.redis_server import (  # noqa: E402
    RedisServer,
    redis_server_binary,
    scripts_run,
)

GOALS_MS = {"local": 1.0, "redis": 1.0}
"""Most a turn's budget work may take (p50)."""


def _scripts_run(url: str | None) -> int:
    """Scripts the Redis at ``url`` ran so far (each budget round trip runs one)."""
    return 0 if url is None else scripts_run(url)


async def _turns(home: Path, env: dict[str, str], turns: int, people: int) -> dict[str, Any]:
    settings = load_settings(
        home,
        {
            "CHORUS_HOME": str(home),
            "CHORUS_BUDGETS__USER__TOKENS_PER_DAY": str(10**12),
            "CHORUS_BUDGETS__USER__COST_PER_MONTH": "1000000",
            **env,
        },
    )
    meter = open_meter(lambda: settings, home / "state.db", is_admin=lambda _: False)
    who = [f"telegram:{n}" for n in range(people)]
    for person in who:  # first touch: counters read from the ledger once
        await meter.check(person, "telegram:1")
    url = env.get("CHORUS_REDIS__URL")
    scripts_before = _scripts_run(url)
    spent: list[float] = []
    for n in range(turns):
        person = who[n % people]
        charge = Charge(person, f"s{n % people}", "turn", "telegram:1")
        started = time.perf_counter()
        await meter.check(person, charge.chat)
        hold = await meter.reserve(charge, "gpt-4o-mini", 1_200)
        await meter.settle(hold, "gpt-4o-mini", (1_000, 200, 150), estimated=False)
        await meter.notice(person, charge.chat)
        spent.append((time.perf_counter() - started) * 1000)
    await meter.aclose()  # sends what is left: the round trips below include it
    round_trips = (_scripts_run(url) - scripts_before) / turns
    spent.sort()
    return {
        "turns": turns,
        "people": people,
        "round_trips_per_turn": round(round_trips, 3) if url else 0,
        "mean_ms": round(statistics.fmean(spent), 4),
        "p50_ms": round(spent[len(spent) // 2], 4),
        "p99_ms": round(spent[int(len(spent) * 0.99)], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--people", type=int, default=50)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "local"
        home.mkdir(mode=0o700)
        results["local"] = asyncio.run(_turns(home, {}, args.turns, args.people))
        if redis_server_binary() is None:
            results["redis"] = None
            print("redis-server not installed: the Redis run is skipped")
        else:
            server = RedisServer(Path(tmp) / "redis")
            server.start()
            try:
                home = Path(tmp) / "redis-home"
                home.mkdir(mode=0o700)
                env = {"CHORUS_REDIS__URL": server.url}
                results["redis"] = asyncio.run(_turns(home, env, args.turns, args.people))
            finally:
                server.stop()
    for name, figures in results.items():
        if figures is None:
            continue
        figures["goal_ms"] = GOALS_MS[name]
        figures["met"] = figures["p50_ms"] <= GOALS_MS[name]
        print(
            f"{name:>5}: mean {figures['mean_ms']} ms, p50 {figures['p50_ms']} ms, "
            f"p99 {figures['p99_ms']} ms a turn (goal: p50 <= {GOALS_MS[name]} ms)"
            + (f", {figures['round_trips_per_turn']} round trips" if name == "redis" else "")
        )
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "budget_check.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

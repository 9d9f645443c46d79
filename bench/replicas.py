"""Several gateway replicas: CPU per answered message and end-to-end latency, 1, 2 and 4 replicas.

For each replica count a fresh cluster (tests/replicas/cluster.py): real
``chorus gateway --replica-id`` processes and one ``chorus worker`` on one
redis-server and one PostgreSQL database (a throwaway cluster), the tests'
fake Telegram posting webhook updates to the replicas in turn, the fake LLM
answering at once. ``--users`` people each write ``--messages`` messages, each
one after the answer to the one before. Reported per replica count:

- answered and correct (each answer once, in order),
- CPU seconds of the replica processes per answered message (their user+system
  time over the run, from /proc), and of the worker,
- end-to-end latency (message posted to the fake until its answer is there):
  p50 and p99,
- what does not depend on the machine's load: Redis commands per message
  (the server's ``INFO commandstats`` before and after, each command's count
  too), PostgreSQL transactions per message (``pg_stat_database``'s
  ``xact_commit`` + ``xact_rollback`` of the cluster's database), and the
  replicas' CPU while idle (``--idle`` seconds before the first message), which
  every replica spends whatever it serves.

A single run's CPU a message swings with the host by more than the goal itself
(one replica: 23 to 34 ms in runs an hour apart), so the counts are run in
``--rounds`` rounds, taking turns (1, 2, 4, 1, 2, 4, ...): each count's figures
are the median over its rounds (each round's CPU a message kept beside it), and
what a count adds over the first is the median of the differences within a
round, the runs minutes apart rather than hours. Goal (issue #32, README,
Performance): ``ADDED_GOAL_MS`` at most, at every count.

On a 2-core machine this measures what a message costs, not a speed-up: the
replicas, the worker, Redis, PostgreSQL and the fakes share the two cores.

Run: uv run python bench/replicas.py [--users 30] [--messages 5] [--counts 1 2 4] [--idle 5]
     [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import FakeOpenAI, Reply  # noqa: E402
from tests.fakes.postgres_server import PostgresServer  # noqa: E402
from tests.fakes.redis_server import RedisServer  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402
from tests.replicas.cluster import Cluster, Process  # noqa: E402

FIRST_USER = 7000
TICKS = os.sysconf("SC_CLK_TCK")
ADDED_GOAL_MS = 3.0
"""Most a message may cost the replicas in CPU over what it costs one (ms)."""


def cpu_seconds(process: Process) -> float:
    """User + system time of a live process so far."""
    fields = Path(f"/proc/{process.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def redis_commands(url: str) -> dict[str, int]:
    """Calls of each command the Redis server has answered so far."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return {
        name.removeprefix("cmdstat_"): int(value["calls"])
        for name, value in stats.items()
        if isinstance(value, dict)
    }


def pg_transactions(url: str) -> int:
    """Transactions committed or rolled back in the database at ``url`` so far."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def echo(body: dict[str, Any]) -> Reply:
    users = [m for m in body["messages"] if m["role"] == "user"]
    text = str(users[-1]["content"]).splitlines()[0] if users else ""
    return Reply.of_text(f"echo: {text}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def one_run(
    root: Path, replicas: int, users: int, messages: int, idle: float
) -> dict[str, Any]:
    with (
        RedisServer(root / "redis") as redis_server,
        PostgresServer(root / "postgres") as postgres,
        FakeOpenAI() as llm,
        FakeTelegram() as telegram,
    ):
        llm.responder(echo)
        database = postgres.create_database()
        cluster = Cluster(root / "cluster", redis_server.url, database, llm, telegram)
        try:
            started = [await cluster.replica(f"replica-{n}") for n in range(replicas)]
            worker = cluster.worker("worker")
            cluster.balance(*started)
            await asyncio.sleep(2.0)  # start-up work done
            idle_before = sum(cpu_seconds(p) for p in started)
            await asyncio.sleep(idle)
            idle_cpu = sum(cpu_seconds(p) for p in started) - idle_before
            cpu_before = {p.name: cpu_seconds(p) for p in [*started, worker]}
            commands_before = redis_commands(redis_server.url)
            # stats are sent by backends when idle, at most once a second
            await asyncio.sleep(1.1)
            transactions_before = pg_transactions(database)
            latencies: list[float] = []

            async def converse(user: int) -> None:
                for n in range(messages):
                    expected = f"echo: u{user} m{n}"
                    sent = time.monotonic()
                    telegram.message(f"u{user} m{n}", user_id=user)
                    await telegram.wait_for(
                        lambda expected=expected, user=user: any(
                            m.text == expected for m in telegram.in_chat(user)
                        ),
                        timeout=120,
                    )
                    latencies.append(time.monotonic() - sent)

            wall = time.monotonic()
            people = [FIRST_USER + n for n in range(users)]
            await asyncio.gather(*(converse(u) for u in people))
            wall = time.monotonic() - wall
            await asyncio.sleep(1.0)
            correct = sum(
                [m.text for m in telegram.in_chat(u)]
                == [f"echo: u{u} m{n}" for n in range(messages)]
                for u in people
            )
            replica_cpu = sum(cpu_seconds(p) - cpu_before[p.name] for p in started)
            worker_cpu = cpu_seconds(worker) - cpu_before[worker.name]
            commands_after = redis_commands(redis_server.url)
            await asyncio.sleep(1.1)
            transactions = pg_transactions(database) - transactions_before
        finally:
            for process in cluster.processes:
                if process.proc.poll() is None:
                    process.kill()
    answered = len(latencies)
    per = max(answered, 1)
    commands = {
        name: round((calls - commands_before.get(name, 0)) / per, 2)
        for name, calls in sorted(commands_after.items())
        if calls - commands_before.get(name, 0) > 0 and name != "info"
    }
    return {
        "replicas": replicas,
        "messages": users * messages,
        "answered": answered,
        "people_all_correct": correct,
        "people": users,
        "wall_s": round(wall, 2),
        "replica_cpu_ms_per_message": round(1000 * replica_cpu / max(answered, 1), 1),
        "worker_cpu_ms_per_message": round(1000 * worker_cpu / max(answered, 1), 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(1000 * percentile(latencies, 0.99), 1) if latencies else None,
        "idle_cpu_ms_per_replica_s": round(1000 * idle_cpu / max(idle, 0.001) / replicas, 2),
        "redis_commands_per_message": round(sum(commands.values()), 1),
        "redis_commands": commands,
        "pg_transactions_per_message": round(transactions / per, 1),
    }


def combined(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One replica count's runs as one: the median of each figure (the fewest answered
    and correct), each round's CPU a message kept; the Redis commands of the last."""
    figures: dict[str, Any] = dict(rounds[-1])
    for key, value in rounds[-1].items():
        values = [r[key] for r in rounds]
        if key in ("answered", "people_all_correct"):
            figures[key] = min(values)
        elif isinstance(value, float) and all(isinstance(v, (int, float)) for v in values):
            figures[key] = round(statistics.median(values), 2)
    figures["rounds"] = [r["replica_cpu_ms_per_message"] for r in rounds]
    return figures


def added(runs: dict[int, list[dict[str, Any]]], base: int) -> dict[str, float]:
    """What each count's replicas spend a message over ``base``'s: the median of the
    differences within each round."""
    return {
        str(count): round(
            statistics.median(
                r["replica_cpu_ms_per_message"] - b["replica_cpu_ms_per_message"]
                for r, b in zip(rounds, runs[base], strict=True)
            ),
            2,
        )
        for count, rounds in runs.items()
        if count != base
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    runs: dict[int, list[dict[str, Any]]] = {count: [] for count in args.counts}
    for round_ in range(args.rounds):
        for count in args.counts:
            with tempfile.TemporaryDirectory(prefix="chorus-replicas-") as tmp:
                result = await one_run(Path(tmp), count, args.users, args.messages, args.idle)
            print(json.dumps({"round": round_ + 1, **result}), flush=True)
            runs[count].append(result)
    more = added(runs, args.counts[0])
    print(
        f"replica CPU a message over {args.counts[0]} replica(s), median of {args.rounds}"
        f" round(s): " + ", ".join(f"{n}: {ms:+} ms" for n, ms in more.items()),
        flush=True,
    )
    combined_runs = [combined(runs[count]) for count in args.counts]
    for run in combined_runs[1:]:
        run["added_cpu_per_message_ms"] = more[str(run["replicas"])]
    return {
        "users": args.users,
        "messages_each": args.messages,
        "rounds": args.rounds,
        "runs": combined_runs,
        "goal_added_ms": ADDED_GOAL_MS,
        "met": all(ms <= ADDED_GOAL_MS for ms in more.values()),
    }


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--idle", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3, help="each count this many times")
    args = parser.parse_args()
    if args.rounds < 1 or not args.counts:
        parser.error("--rounds must be at least 1 and --counts name at least one count")
    figures = asyncio.run(main_async(args))
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / "replicas.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

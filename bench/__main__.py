"""Runs every benchmark in bench/ in turn and prints one summary table.

Run: uv run python -m bench [--quick] [--only NAME ...] [--compare OLD.json]
(or ./scripts/bench)

Each bench runs as its own process (``python bench/NAME.py``) with its default
sizes, or with small ones under ``--quick`` so the whole suite takes a few
minutes; its own output goes to this terminal as it runs. Every bench writes its
figures as JSON; this reads the key ones back and prints a table of them with the
goal where one is set (from the README or the bench's test) and whether it was
met. Results go to ``bench/results/`` (with ``--quick`` to ``bench/results/quick/``,
so a smoke run never overwrites the figures of a full one; the benches take the
directory from ``BENCH_RESULTS_DIR``), the table to ``summary.json`` there, with
each bench's key figures as numbers. ``--compare OLD.json`` then prints every key
figure's change against that earlier summary, regressions marked
(``bench/_compare.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))

from bench import _verdicts as verdicts  # noqa: E402
from bench._compare import changes, load, pick, report  # noqa: E402
from bench._verdicts import Figures, Verdict  # noqa: E402


@dataclass(frozen=True)
class Bench:
    name: str
    quick: tuple[str, ...]
    """Arguments of a quick run (a full run passes none: the bench's defaults)."""
    verdict: Callable[[Figures], Verdict] | None
    """Reads the figures of ``bench/results/NAME.json``; None: no summary."""
    numbers: tuple[str, ...] = ()
    """Paths of its key figures in that JSON, kept in the summary for ``--compare``."""


BENCHES = [
    Bench(
        "burst",
        ("--users", "30", "--runs", "1"),
        verdicts.burst,
        ("first_reply_s", "all_replies_s", "ratio_to_floor"),
    ),
    Bench(
        "sessions",
        ("--turns", "5", "--sessions", "50"),
        verdicts.sessions,
        (
            "overhead.p50_ms",
            "overhead.p90_ms",
            "overhead.cpu_ms_per_message",
            "slow_provider.added_p50_ms",
            "memory.0.kb_per_session",
        ),
    ),
    Bench(
        "transcript_search",
        ("--messages", "20000", "--users", "100"),
        verdicts.transcript_search,
        (
            "search.common.p50_ms",
            "search.common.p99_ms",
            "search.rare.p50_ms",
            "append_per_second_full_db",
        ),
    ),
    Bench("worker", ("1000", "1"), verdicts.worker, ("jobs_per_second",)),
    Bench(
        "expiry",
        ("--sessions", "10000", "--ending", "50"),
        verdicts.expiry,
        ("tick.tick_ms", "ending.all_ended_s", "ending.ms_per_session"),
    ),
    Bench(
        "shutdown",
        ("--users", "10", "--latency", "10", "--timeout", "6"),
        verdicts.shutdown,
        ("exit_s",),
    ),
    Bench(
        "holographic_recall",
        (),
        verdicts.holographic,
        ("hrr join.precision_at_1", "plain join.precision_at_1"),
    ),
    Bench("memory_store", (), verdicts.memory_store, ("one_writer_per_s", "four_writers_per_s")),
    Bench("gateway_concurrency", ("20", "2", "0.1"), verdicts.concurrency, ("wall_s", "speedup")),
    Bench(
        "budget_check",
        ("--turns", "300", "--people", "10"),
        verdicts.budget_check,
        ("local.p50_ms", "redis.p50_ms", "redis.round_trips_per_turn"),
    ),
    Bench("tool_policy", ("--requests", "300"), verdicts.tool_policy, ("p50_ms",)),
    Bench(
        "tracing",
        ("--turns", "10", "--rounds", "2"),
        verdicts.tracing,
        ("added_p50_ms", "added_cpu_ms_per_message"),
    ),
    Bench(
        "replicas",
        ("--users", "10", "--messages", "3", "--counts", "1", "2", "--rounds", "1"),
        verdicts.replicas,
        (
            "runs.0.replica_cpu_ms_per_message",
            "runs.1.replica_cpu_ms_per_message",
            "runs.2.replica_cpu_ms_per_message",
            "runs.1.added_cpu_per_message_ms",
            "runs.2.added_cpu_per_message_ms",
            "runs.0.p50_ms",
            "runs.1.p50_ms",
        ),
    ),
]


def every_bench() -> list[Bench]:
    """The known benches, then any other script in bench/ (run with no arguments)."""
    known = {b.name for b in BENCHES}
    others = sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_"))
    return BENCHES + [Bench(name, (), None) for name in others if name not in known]


def run_one(bench: Bench, quick: bool, results: Path) -> dict[str, Any]:
    command = [sys.executable, str(BENCH / f"{bench.name}.py"), *(bench.quick if quick else ())]
    print(f"\n== {bench.name}: {' '.join(command[1:])}", flush=True)
    out = results / f"{bench.name}.json"
    started = time.time()
    code = subprocess.run(command, cwd=ROOT, env={**os.environ, "BENCH_RESULTS_DIR": str(results)})
    entry: dict[str, Any] = {
        "bench": bench.name,
        "args": list(command[2:]),
        "seconds": round(time.time() - started, 1),
        "exit_code": code.returncode,
        "figures": None,
        "goal": None,
        "met": None,
        "numbers": {},
    }
    if code.returncode != 0:
        entry["figures"] = f"failed (exit {code.returncode})"
        return entry
    if not out.exists() or out.stat().st_mtime < started:
        entry["figures"] = f"no fresh {out.name}"
        return entry
    if bench.verdict is None:
        entry["figures"] = f"see {out.name}"
        return entry
    try:
        figures = json.loads(out.read_text())
        entry["numbers"] = pick(figures, bench.numbers) if isinstance(figures, dict) else {}
        entry["figures"], entry["goal"], entry["met"] = bench.verdict(figures)
    except (KeyError, TypeError, ValueError) as exc:
        entry["figures"] = f"unreadable {out.name} ({type(exc).__name__}: {exc})"
    return entry


def table(entries: list[dict[str, Any]]) -> str:
    marks = {True: "met", False: "NOT MET", None: "-"}
    rows = [("bench", "figures", "goal", "met", "s")] + [
        (e["bench"], str(e["figures"]), e["goal"] or "-", marks[e["met"]], f"{e['seconds']:.0f}")
        for e in entries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def earlier(path: Path) -> dict[str, dict[str, Any]]:
    """The rows of a summary written before, by bench."""
    try:
        return {e["bench"]: e for e in json.loads(path.read_text())["benches"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a few minutes in all")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these benches")
    parser.add_argument(
        "--compare",
        metavar="OLD.json",
        type=Path,
        help="then print each key figure's change against an earlier summary.json",
    )
    args = parser.parse_args()
    old = None
    if args.compare is not None:
        try:
            old = load(args.compare)  # read first: a wrong path fails before a long run
        except ValueError as exc:
            parser.error(str(exc))
    benches = every_bench()
    if args.only:
        unknown = set(args.only) - {b.name for b in benches}
        if unknown:
            parser.error(f"unknown bench(es): {', '.join(sorted(unknown))}")
        benches = [b for b in benches if b.name in args.only]
    results = BENCH / "results" / ("quick" if args.quick else "")
    results.mkdir(parents=True, exist_ok=True)
    entries = [run_one(bench, args.quick, results) for bench in benches]
    print("\n" + table(entries))
    path = results / "summary.json"
    kept = earlier(path) if args.only else {}  # --only: the other benches' rows stay
    kept.update({e["bench"]: e for e in entries})
    order = [b.name for b in every_bench()]
    rows = sorted(
        kept.values(), key=lambda e: order.index(e["bench"]) if e["bench"] in order else 99
    )
    summary = {"quick": args.quick, "results": str(results), "benches": rows}
    path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwritten: {path}")
    if old is not None:
        print(f"\nagainst {args.compare}:\n" + report(changes(old, load(path))))
    failed = [e for e in entries if e["exit_code"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

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

from bench._compare import changes, load, pick, report  # noqa: E402

Figures = dict[str, Any]
Verdict = tuple[str, str | None, bool | None]
"""What to show of the figures, the goal (None: no goal set) and whether it was met."""


def _burst(r: Figures) -> Verdict:
    first = r["first_reply_s"]
    after_llm = None if first is None else round(first - r["llm_latency_s"], 3)
    text = (
        f"{r['answered']}/{r['users']} answered, all after {r['all_replies_s']} s"
        f" ({r['ratio_to_floor']}x the floor); first {after_llm} s after the LLM's;"
        f" {r['calls_per_reply']} calls/reply"
    )
    if len(r.get("runs", ())) > 1:
        firsts = ", ".join(str(run["first_reply_s"]) for run in r["runs"])
        text += f" (median of {len(r['runs'])} bursts; first answers {firsts} s)"
    ratio = r["ratio_to_floor"]
    met = (
        after_llm is not None
        and after_llm <= 0.1
        and r["answered"] == r["users"]
        and ratio is not None
        and ratio <= 1.2
    )
    return text, "all ≤ 1.2x the floor; first ≤ 0.1 s after the LLM's", met


def _sessions(r: Figures) -> Verdict:
    over, prefix, memory = r["overhead"], r["prefix"], r["memory"]
    slow = r["slow_provider"]["added_p50_ms"]
    per = ", ".join(f"{m['kb_per_session']} KB at {m['sessions']}" for m in memory)
    text = (
        f"overhead p50 {over['p50_ms']} ms, p90 {over['p90_ms']} ms,"
        f" CPU {over.get('cpu_ms_per_message')} ms a message; per session {per};"
        f" prefix identical {prefix['identical_to_previous_pct']} %; slow provider +{slow} ms"
    )
    met = (
        over["p50_ms"] <= 8
        and over["p90_ms"] <= 12
        and prefix["identical_to_previous_pct"] == 100.0
        and all(m["kb_per_session"] <= 50 for m in memory)
        and slow <= 5
    )
    goal = (
        "overhead ≤ 8 ms p50, ≤ 12 ms p90; prompt identical 100 %; ≤ 50 KB/session;"
        " slow provider ≤ +5 ms"
    )
    return text, goal, met


def _transcript_search(r: Figures) -> Verdict:
    search = r["search"]
    text = (
        f"{r['messages']:,} messages: common p50 {search['common']['p50_ms']:.1f} ms,"
        f" p99 {search['common']['p99_ms']:.1f} ms; rare p50 {search['rare']['p50_ms']:.2f} ms;"
        f" {r['append_per_second_full_db']:,.0f} appends/s"
    )
    met = max(kind["p50_ms"] for kind in search.values()) <= 10
    return text, "p50 ≤ 10 ms for any query", met


def _worker(r: Figures) -> Verdict:
    if r["wall_seconds"] - r["startup_seconds"] >= 0.5:
        rate = f"{r['jobs_per_second_after_startup']:,.0f} jobs/s after start-up"
    else:  # too few jobs to tell the start-up apart
        rate = f"{r['jobs_per_second']:,.0f} jobs/s with start-up"
    text = f"{rate} ({r['synced']:.0f}/{r['jobs']:.0f} synced, concurrency {r['concurrency']:.0f})"
    return text, "every job synced", r["synced"] == r["jobs"]


def _expiry(r: Figures) -> Verdict:
    tick, end = r["tick"], r["ending"]
    text = (
        f"tick {tick['tick_ms'] * 1000:.0f} µs at {tick['open_sessions']:,} open;"
        f" {end['ended']}/{end['sessions']} ended in {end['all_ended_s']} s"
        f" ({end['ms_per_session']} ms each)"
    )
    met = tick["met"] and end["ended"] == end["sessions"]
    return text, f"tick ≤ {tick['goal_tick_ms']} ms; every due session ended", met


def _shutdown(r: Figures) -> Verdict:
    saw = ", ".join(f"{n} {kind}" for kind, n in r["users_saw"].items())
    text = (
        f"{r['users']} busy: exit {r['exit_code']} after {r['exit_s']} s"
        f" (timeout {r['shutdown_timeout_s']} s); users saw {saw}"
    )
    after = r.get("after_restart")
    if after is not None:
        text += "; after restart " + ", ".join(
            f"{n} {kind}" for kind, n in after["users_saw"].items()
        )
    met = r["exit_code"] == 0 and r["exit_s"] <= r["shutdown_timeout_s"]
    return text, "exit 0 within gateway.shutdown_timeout", met


def _holographic(r: Figures) -> Verdict:
    modes = {m: r[m] for m in ("hrr join", "plain join") if r.get(m)}
    text = ", ".join(f"{m} p@1 {f['precision_at_1']:.2f}" for m, f in modes.items())
    embedded = r.get("hrr join emb")
    if embedded:
        text += (
            f"; with embeddings p@1 {embedded['precision_at_1']:.2f}, synonyms "
            f"{embedded['synonyms_precision_at_1']:.2f}"
        )
    unbound = r.get("hrr unbind")
    if unbound:
        text += f"; probe exact {unbound['probe']['exact']:.2f} by unbinding"
    text += f" ({r['facts']} facts / {r['queries']} queries)"
    met = bool(modes) and all(f["precision_at_1"] >= 0.8 for f in modes.values())
    return text, "p@1 ≥ 0.8 (tests/plugins/test_holographic_ranking.py)", met


def _memory_store(r: Figures) -> Verdict:
    text = (
        f"{r['one_writer_per_s']:,.0f} writes/s alone, {r['four_writers_per_s']:,.0f}"
        f" with 4 processes ({r['ratio']:.2f}x)"
    )
    return text, None, None


def _concurrency(r: Figures) -> Verdict:
    text = (
        f"{r['sessions']}x{r['messages']} in {r['wall_s']:.2f} s ({r['speedup']:.1f}x serial);"
        f" max in flight {r['in_flight_max']} (cap {r['max_concurrent_turns']})"
    )
    return (
        text,
        "in flight ≤ sessions.max_concurrent_turns",
        (r["in_flight_max"] <= r["max_concurrent_turns"]),
    )


def _replicas(r: Figures) -> Verdict:
    runs = r["runs"]
    text = "; ".join(
        f"{run['replicas']}: {run['replica_cpu_ms_per_message']} ms CPU/msg"
        + (
            f" ({run['added_cpu_per_message_ms']:+} ms)"
            if "added_cpu_per_message_ms" in run
            else ""
        )
        + f", p50 {run['p50_ms']} ms, p99 {run['p99_ms']} ms"
        for run in runs
    )
    text += f" (median of {r.get('rounds', 1)} round(s))"
    met = bool(r.get("met", True)) and all(
        run["answered"] == run["messages"] and run["people_all_correct"] == run["people"]
        for run in runs
    )
    goal = (
        "every message answered once, in order, at every replica count;"
        f" ≤ +{r.get('goal_added_ms', 3.0)} ms CPU/msg over 1 replica"
    )
    return text, goal, met


def _budget_check(r: Figures) -> Verdict:
    runs = {name: figures for name, figures in r.items() if figures is not None}
    text = "; ".join(
        f"{name} p50 {f['p50_ms']} ms a turn (p99 {f['p99_ms']} ms"
        + (f", {f['round_trips_per_turn']} round trips)" if name == "redis" else ")")
        for name, f in runs.items()
    )
    met = all(f["met"] for f in runs.values())
    return text or "no run", "≤ 1 ms p50 a turn, with Redis or without", met


def _tool_policy(r: Figures) -> Verdict:
    text = (
        f"{r['tools']} tools against {r['rules']} rules: p50 {r['p50_ms']} ms,"
        f" p99 {r['p99_ms']} ms a request"
    )
    return text, f"≤ {r['goal_ms']} ms p50 a message", r["met"]


def _tracing(r: Figures) -> Verdict:
    text = (
        f"reply p50 {r['off_p50_ms']} ms off, {r['on_p50_ms']} ms on ({r['added_p50_ms']:+} ms);"
        f" CPU {r['off_cpu_ms_per_message']} / {r['on_cpu_ms_per_message']} ms a message"
    )
    return text, "tracing adds ≤ 1 ms p50 a message", r["met"]


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
        _burst,
        ("first_reply_s", "all_replies_s", "ratio_to_floor"),
    ),
    Bench(
        "sessions",
        ("--turns", "5", "--sessions", "50"),
        _sessions,
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
        _transcript_search,
        (
            "search.common.p50_ms",
            "search.common.p99_ms",
            "search.rare.p50_ms",
            "append_per_second_full_db",
        ),
    ),
    Bench("worker", ("1000", "1"), _worker, ("jobs_per_second",)),
    Bench(
        "expiry",
        ("--sessions", "10000", "--ending", "50"),
        _expiry,
        ("tick.tick_ms", "ending.all_ended_s", "ending.ms_per_session"),
    ),
    Bench(
        "shutdown",
        ("--users", "10", "--latency", "10", "--timeout", "6"),
        _shutdown,
        ("exit_s",),
    ),
    Bench(
        "holographic_recall",
        (),
        _holographic,
        ("hrr join.precision_at_1", "plain join.precision_at_1"),
    ),
    Bench("memory_store", (), _memory_store, ("one_writer_per_s", "four_writers_per_s")),
    Bench("gateway_concurrency", ("20", "2", "0.1"), _concurrency, ("wall_s", "speedup")),
    Bench(
        "budget_check",
        ("--turns", "300", "--people", "10"),
        _budget_check,
        ("local.p50_ms", "redis.p50_ms", "redis.round_trips_per_turn"),
    ),
    Bench("tool_policy", ("--requests", "300"), _tool_policy, ("p50_ms",)),
    Bench(
        "tracing",
        ("--turns", "10", "--rounds", "2"),
        _tracing,
        ("added_p50_ms", "added_cpu_ms_per_message"),
    ),
    Bench(
        "replicas",
        ("--users", "10", "--messages", "3", "--counts", "1", "2", "--rounds", "1"),
        _replicas,
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

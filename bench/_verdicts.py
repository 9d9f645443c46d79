"""How ``python -m bench`` reads each bench's figures: what to show, the goal, whether met.

One function per bench: it takes the JSON the bench wrote and returns the text of
its row in the summary table, its goal (from the README or the bench's test; None
when none is set) and whether the figures meet it.
"""

from __future__ import annotations

from typing import Any

Figures = dict[str, Any]
Verdict = tuple[str, str | None, bool | None]
"""What to show of the figures, the goal (None: no goal set) and whether it was met."""


def burst(r: Figures) -> Verdict:
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


def sessions(r: Figures) -> Verdict:
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


def transcript_search(r: Figures) -> Verdict:
    search = r["search"]
    text = (
        f"{r['messages']:,} messages: common p50 {search['common']['p50_ms']:.1f} ms,"
        f" p99 {search['common']['p99_ms']:.1f} ms; rare p50 {search['rare']['p50_ms']:.2f} ms;"
        f" {r['append_per_second_full_db']:,.0f} appends/s"
    )
    met = max(kind["p50_ms"] for kind in search.values()) <= 10
    return text, "p50 ≤ 10 ms for any query", met


def worker(r: Figures) -> Verdict:
    if r["wall_seconds"] - r["startup_seconds"] >= 0.5:
        rate = f"{r['jobs_per_second_after_startup']:,.0f} jobs/s after start-up"
    else:  # too few jobs to tell the start-up apart
        rate = f"{r['jobs_per_second']:,.0f} jobs/s with start-up"
    text = f"{rate} ({r['synced']:.0f}/{r['jobs']:.0f} synced, concurrency {r['concurrency']:.0f})"
    return text, "every job synced", r["synced"] == r["jobs"]


def expiry(r: Figures) -> Verdict:
    tick, end = r["tick"], r["ending"]
    text = (
        f"tick {tick['tick_ms'] * 1000:.0f} µs at {tick['open_sessions']:,} open;"
        f" {end['ended']}/{end['sessions']} ended in {end['all_ended_s']} s"
        f" ({end['ms_per_session']} ms each)"
    )
    met = tick["met"] and end["ended"] == end["sessions"]
    return text, f"tick ≤ {tick['goal_tick_ms']} ms; every due session ended", met


def shutdown(r: Figures) -> Verdict:
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


def holographic(r: Figures) -> Verdict:
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


def memory_store(r: Figures) -> Verdict:
    text = (
        f"{r['one_writer_per_s']:,.0f} writes/s alone, {r['four_writers_per_s']:,.0f}"
        f" with 4 processes ({r['ratio']:.2f}x)"
    )
    return text, None, None


def concurrency(r: Figures) -> Verdict:
    text = (
        f"{r['sessions']}x{r['messages']} in {r['wall_s']:.2f} s ({r['speedup']:.1f}x serial);"
        f" max in flight {r['in_flight_max']} (cap {r['max_concurrent_turns']})"
    )
    return (
        text,
        "in flight ≤ sessions.max_concurrent_turns",
        (r["in_flight_max"] <= r["max_concurrent_turns"]),
    )


def replicas(r: Figures) -> Verdict:
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


def budget_check(r: Figures) -> Verdict:
    runs = {name: figures for name, figures in r.items() if figures is not None}
    text = "; ".join(
        f"{name} p50 {f['p50_ms']} ms a turn (p99 {f['p99_ms']} ms"
        + (f", {f['round_trips_per_turn']} round trips)" if name == "redis" else ")")
        for name, f in runs.items()
    )
    met = all(f["met"] for f in runs.values())
    return text or "no run", "≤ 1 ms p50 a turn, with Redis or without", met


def tool_policy(r: Figures) -> Verdict:
    text = (
        f"{r['tools']} tools against {r['rules']} rules: p50 {r['p50_ms']} ms,"
        f" p99 {r['p99_ms']} ms a request"
    )
    return text, f"≤ {r['goal_ms']} ms p50 a message", r["met"]


def tracing(r: Figures) -> Verdict:
    text = (
        f"reply p50 {r['off_p50_ms']} ms off, {r['on_p50_ms']} ms on ({r['added_p50_ms']:+} ms);"
        f" CPU {r['off_cpu_ms_per_message']} / {r['on_cpu_ms_per_message']} ms a message"
    )
    return text, "tracing adds ≤ 1 ms p50 a message", r["met"]

"""``./scripts/bench --compare OLD.json``: each key figure of a run against an earlier
summary, a change for the worse past the threshold marked as a regression."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench._compare import ADDED_FLOOR_MS, THRESHOLD, changes, load, pick, report

ROOT = Path(__file__).resolve().parent.parent


def summary(tmp_path: Path, name: str, numbers: dict[str, dict[str, float]]) -> Path:
    path = tmp_path / name
    rows = [{"bench": bench, "figures": "…", "numbers": found} for bench, found in numbers.items()]
    path.write_text(json.dumps({"quick": False, "benches": rows}))
    return path


def test_pick_reads_nested_figures_and_leaves_out_what_is_not_a_number() -> None:
    figures = {
        "overhead": {"p50_ms": 11.5, "p90_ms": 14},
        "runs": [{"p50_ms": 3.0}, {"p50_ms": 4.5}],
        "hrr join": {"precision_at_1": 0.92},
        "ok": True,
        "text": "12 ms",
    }
    paths = ("overhead.p50_ms", "overhead.p90_ms", "runs.1.p50_ms", "hrr join.precision_at_1")
    assert pick(figures, (*paths, "runs.5.p50_ms", "ok", "text", "missing.x")) == {
        "overhead.p50_ms": 11.5,
        "overhead.p90_ms": 14.0,
        "runs.1.p50_ms": 4.5,
        "hrr join.precision_at_1": 0.92,
    }


def test_a_slower_or_weaker_figure_is_a_regression_and_a_better_one_is_not(
    tmp_path: Path,
) -> None:
    old = summary(
        tmp_path,
        "old.json",
        {
            "sessions": {
                "overhead.p50_ms": 8.0,
                "overhead.p90_ms": 12.0,
                "memory.0.kb_per_session": 27.3,
            },
            "worker": {"jobs_per_second": 180.0},
            "holographic_recall": {"hrr join.precision_at_1": 0.9},
            "gone": {"x_ms": 1.0},
        },
    )
    new = summary(
        tmp_path,
        "new.json",
        {
            "sessions": {
                "overhead.p50_ms": 12.0,
                "overhead.p90_ms": 11.0,
                "memory.0.kb_per_session": 23.8,
            },
            "worker": {"jobs_per_second": 100.0},
            "holographic_recall": {"hrr join.precision_at_1": 0.92},
            "fresh": {"y_ms": 1.0},
        },
    )
    found = {(c.bench, c.figure): c for c in changes(load(old), load(new))}
    assert set(found) == {
        ("sessions", "overhead.p50_ms"),
        ("sessions", "overhead.p90_ms"),
        ("sessions", "memory.0.kb_per_session"),
        ("worker", "jobs_per_second"),
        ("holographic_recall", "hrr join.precision_at_1"),
    }
    assert found["sessions", "overhead.p50_ms"].percent == pytest.approx(50.0)
    assert found["sessions", "overhead.p50_ms"].regression  # 50 % more milliseconds
    assert not found["sessions", "overhead.p90_ms"].regression  # faster
    assert not found["sessions", "memory.0.kb_per_session"].regression  # smaller
    assert found["worker", "jobs_per_second"].regression  # fewer jobs a second
    assert not found["holographic_recall", "hrr join.precision_at_1"].regression

    table = report(list(found.values()))
    assert f"2 of 5 figures worse by more than {THRESHOLD:g} %" in table
    [line] = [row for row in table.splitlines() if "overhead.p50_ms" in row]
    assert "+50.0 %" in line and "REGRESSION" in line


def test_a_change_within_the_threshold_is_not_a_regression(tmp_path: Path) -> None:
    small = 1 + (THRESHOLD / 2) / 100
    old = summary(tmp_path, "old.json", {"sessions": {"overhead.p50_ms": 10.0}})
    new = summary(tmp_path, "new.json", {"sessions": {"overhead.p50_ms": 10.0 * small}})
    [change] = changes(load(old), load(new))
    assert not change.regression


def test_what_something_adds_is_judged_by_milliseconds_not_per_cent(tmp_path: Path) -> None:
    """-1.6 -> -1.2 ms is +25 % of nothing; 0.04 -> 0.79 ms is 0.75 ms more a message."""
    more = ADDED_FLOOR_MS + 0.25
    old = summary(
        tmp_path,
        "old.json",
        {"sessions": {"slow_provider.added_p50_ms": -1.6}, "tracing": {"added_p50_ms": 0.04}},
    )
    new = summary(
        tmp_path,
        "new.json",
        {
            "sessions": {"slow_provider.added_p50_ms": -1.2},
            "tracing": {"added_p50_ms": 0.04 + more},
        },
    )
    found = {c.bench: c for c in changes(load(old), load(new))}
    assert found["sessions"].percent == pytest.approx(25.0)
    assert not found["sessions"].regression
    assert found["tracing"].regression


def test_a_file_that_is_not_a_summary_is_refused_before_any_bench_runs(tmp_path: Path) -> None:
    wrong = tmp_path / "results.json"
    wrong.write_text(json.dumps({"overhead": {"p50_ms": 9}}))
    missing = tmp_path / "nope.json"
    for path, reason in ((wrong, "is not a bench summary"), (missing, "cannot read")):
        run = subprocess.run(
            [sys.executable, "-m", "bench", "--only", "sessions", "--compare", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 2
        assert reason in run.stderr
        assert "== sessions" not in run.stdout  # nothing ran

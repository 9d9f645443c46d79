"""The change of each key figure against an earlier run (``./scripts/bench --compare OLD``).

A summary (``bench/results/summary.json``) keeps, for each bench, the key figures
read from its JSON (``numbers``: a dotted path, e.g. ``overhead.p50_ms``, and its
value). Comparing two summaries prints, for each figure both have, the old and
the new value and the change in per cent, and marks a change past
``THRESHOLD`` in the direction that is worse (more milliseconds, fewer answers a
second) as a regression, so a slowdown shows the day it lands; what something adds
(``added_…_ms``) is judged by milliseconds (``ADDED_FLOOR_MS``), not per cent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

THRESHOLD = 10.0
"""Per cent of change in the worse direction that counts as a regression."""

HIGHER_IS_BETTER = ("per_s", "per_second", "_pct")
"""Endings of figure names where a larger value is the better one (rates, shares):
``jobs_per_s`` is a rate, ``kb_per_session`` is not."""
HIGHER_IS_BETTER_PARTS = ("precision", "speedup", "exact")
"""Parts of figure names where a larger value is the better one (quality)."""
ADDED_FLOOR_MS = 0.5
"""A figure of what something adds (``added_…_ms``: the cost of tracing, of a slow
provider) is near zero and may be negative, so a share of it means little: it is a
regression when it grew by more than this many milliseconds."""
LOWER_IS_BETTER = ("_ms", "_s", "ms_per", "kb_per", "ratio_to", "round_trips")
"""Endings or parts of the others' names where a smaller value is the better one
(times, sizes); a figure that is neither counts as higher-is-better."""


def pick(figures: dict[str, Any], paths: tuple[str, ...]) -> dict[str, float]:
    """The numbers at ``paths`` (``a.b.0.c``) of a bench's JSON; missing ones left out."""
    found: dict[str, float] = {}
    for path in paths:
        value: Any = figures
        for part in path.split("."):
            if isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            elif isinstance(value, dict) and part in value:
                value = value[part]
            else:
                value = None
                break
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found[path] = float(value)
    return found


def lower_is_better(path: str) -> bool:
    name = path.rsplit(".", 1)[-1]
    if name.endswith(HIGHER_IS_BETTER) or any(mark in name for mark in HIGHER_IS_BETTER_PARTS):
        return False
    return any(name.endswith(mark) or mark in name for mark in LOWER_IS_BETTER)


@dataclass(frozen=True)
class Change:
    bench: str
    figure: str
    old: float
    new: float

    @property
    def percent(self) -> float | None:
        if self.old == 0:
            return None
        return (self.new - self.old) / abs(self.old) * 100

    @property
    def regression(self) -> bool:
        name = self.figure.rsplit(".", 1)[-1]
        if name.startswith("added_") and name.endswith("_ms"):
            return self.new - self.old > ADDED_FLOOR_MS
        pct = self.percent
        if pct is None:
            return False
        worse = pct if lower_is_better(self.figure) else -pct
        return worse > THRESHOLD


def load(path: Path) -> dict[str, dict[str, float]]:
    """Bench -> its key figures, from a summary written by ``python -m bench``.

    Raises ``ValueError`` with a clear message for a file that is not one."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from exc
    rows = data.get("benches") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError(f"{path} is not a bench summary (no 'benches' list)")
    return {
        str(row["bench"]): {k: float(v) for k, v in (row.get("numbers") or {}).items()}
        for row in rows
        if isinstance(row, dict) and "bench" in row
    }


def changes(old: dict[str, dict[str, float]], new: dict[str, dict[str, float]]) -> list[Change]:
    """Every figure both summaries have, bench by bench in the new one's order."""
    return [
        Change(bench, figure, old[bench][figure], value)
        for bench, figures in new.items()
        if bench in old
        for figure, value in figures.items()
        if figure in old[bench]
    ]


def report(found: list[Change]) -> str:
    """A table of the changes; regressions marked, and a last line counting them."""
    if not found:
        return "no figure in common with the earlier run"
    rows = [("bench", "figure", "before", "now", "change", "")]
    for c in found:
        pct = c.percent
        rows.append(
            (
                c.bench,
                c.figure,
                f"{c.old:g}",
                f"{c.new:g}",
                "n/a" if pct is None else f"{pct:+.1f} %",
                "REGRESSION" if c.regression else "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    worse = sum(c.regression for c in found)
    lines.append(f"\n{worse} of {len(found)} figures worse by more than {THRESHOLD:g} %")
    return "\n".join(line.rstrip() for line in lines)

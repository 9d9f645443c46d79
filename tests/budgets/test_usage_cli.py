"""``chorus usage report``: the ledger by person and model, as a table or JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from memory.usage_ledger import LedgerRow, UsageLedger

CHORUS = Path(sys.executable).with_name("chorus")
DAY = 86_400.0


def _report(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHORUS_HOME": str(home)}
    return subprocess.run(
        [str(CHORUS), "usage", "report", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_today_and_this_month_as_json_and_as_a_table(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    now = time.time()
    with UsageLedger(home / "state.db") as ledger:
        ledger.record(
            [
                LedgerRow(
                    now, "telegram:1", "s1", "turn", "gpt-4o-mini", 1000, 200, 100, False, 0.25
                ),
                LedgerRow(now, "telegram:1", "s1", "summary", "gpt-4o-mini", 50, 0, 10, True, 0.01),
                LedgerRow(now, "slack:U2", "s2", "turn", "local", 10, 0, 5, False, None),
                LedgerRow(
                    now - 40 * DAY, "telegram:1", "s0", "turn", "gpt-4o-mini", 9, 0, 9, False, 9.0
                ),
            ]
        )
    done = _report(home, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["timezone"] == "UTC"
    rows = {(r["person"], r["model"]): r for r in report["rows"]}
    assert set(rows) == {("telegram:1", "gpt-4o-mini"), ("slack:U2", "local")}
    mine = rows[("telegram:1", "gpt-4o-mini")]
    assert (mine["calls"], mine["input_tokens"], mine["estimated_calls"]) == (2, 1050, 1)
    assert abs(mine["cost"] - 0.26) < 1e-9
    assert rows[("slack:U2", "local")]["cost"] is None

    month = _report(home, "--month", "--json")
    assert month.returncode == 0, month.stderr
    assert len(json.loads(month.stdout)["period"]) == len("2026-12")

    table = _report(home)
    assert table.returncode == 0, table.stderr
    assert "telegram:1" in table.stdout and "unpriced" in table.stdout

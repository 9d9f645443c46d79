"""How well the holographic memory provider recalls: precision@1, mean rank, ms per query.

Run: uv run python bench/holographic_recall.py [--misses]

Stores the labelled facts of ``tests/plugins/holographic_cases.py`` in a temp
CHORUS_HOME and runs every query through ``fact_store`` search, once with HRR
vectors (numpy) and once without (FTS5 + Jaccard + entities + trust). The test
``tests/plugins/test_holographic_ranking.py`` asserts on the same set. Writes
``bench/results/holographic_recall.json``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.plugins.holographic_cases import (  # noqa: E402
    FACTS,
    QUERIES,
    Recall,
    evaluate,
    load_facts,
    open_provider,
)


def run(hrr: bool) -> tuple[Recall, float] | None:
    """The recall of one mode and the ms it took to store one fact; None if it cannot run."""
    with tempfile.TemporaryDirectory() as home:
        provider = open_provider(Path(home), hrr=hrr)
        if provider.use_hrr != hrr:
            provider.shutdown()
            return None
        start = time.perf_counter()
        ids = load_facts(provider)
        add_ms = (time.perf_counter() - start) * 1000 / len(FACTS)
        evaluate(provider, ids)  # warm caches: the figures are for a provider in use
        result = evaluate(provider, ids)
        provider.shutdown()
    return result, add_ms


def main() -> None:
    show_misses = "--misses" in sys.argv[1:]
    print(f"{len(FACTS)} facts, {len(QUERIES)} queries")
    print(f"{'mode':<8}{'p@1':>8}{'mean rank':>11}{'ms/query':>10}{'ms/add':>8}")
    report: dict[str, object] = {"facts": len(FACTS), "queries": len(QUERIES)}
    for hrr, label in ((True, "hrr"), (False, "plain")):
        measured = run(hrr)
        if measured is None:
            print(f"{label:<8}  (numpy is not installed: pip install 'chorus[holographic]')")
            report[label] = None
            continue
        result, add_ms = measured
        report[label] = {
            "precision_at_1": result.precision_at_1,
            "mean_rank": result.mean_rank,
            "ms_per_query": result.ms_per_query,
            "ms_per_add": add_ms,
        }
        print(
            f"{label:<8}{result.precision_at_1:>8.3f}{result.mean_rank:>11.2f}"
            f"{result.ms_per_query:>10.2f}{add_ms:>8.2f}"
        )
        if show_misses:
            for query, wanted, got in result.misses:
                print(f"    missed {query!r}: wanted {wanted}, got {got or 'nothing'}")

    out = (
        Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results"))
        / "holographic_recall.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

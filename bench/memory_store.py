"""How fast MemoryStore writes are, alone and with writers in other processes.

Run: uv run python bench/memory_store.py
Prints absolute figures (writes per second) and the contention ratio and writes
``bench/results/memory_store.json``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.store import MemoryStore

WRITES = 200


def writer(directory: str, name: str, count: int) -> None:
    store = MemoryStore(Path(directory) / "MEMORY.md", Path(directory) / f"{name}.md", 10**9, 10**9)
    for n in range(count):
        store.add("memory", f"{name} entry {n}")


def timed(processes: int, directory: str) -> float:
    jobs = [
        multiprocessing.Process(target=writer, args=(directory, f"w{p}", WRITES))
        for p in range(processes)
    ]
    start = time.perf_counter()
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as four:
        alone = timed(1, one)
        shared = timed(4, four)
    single_rate = WRITES / alone
    shared_rate = 4 * WRITES / shared
    print(f"1 writer : {single_rate:8.0f} locked atomic writes/s")
    print(f"4 writers: {shared_rate:8.0f} writes/s in total on one MEMORY.md")
    print(f"ratio    : {shared_rate / single_rate:8.2f}x the single-writer rate")
    report = {
        "writes_per_writer": WRITES,
        "one_writer_per_s": single_rate,
        "four_writers_per_s": shared_rate,
        "ratio": shared_rate / single_rate,
    }
    out = (
        Path(os.environ.get("BENCH_RESULTS_DIR", Path(__file__).resolve().parent / "results"))
        / "memory_store.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

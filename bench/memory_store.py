"""How fast MemoryStore writes are, alone and with writers in other processes.

Run: uv run python bench/memory_store.py
Prints absolute figures (writes per second) and the contention ratio.
"""

from __future__ import annotations

import multiprocessing
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


if __name__ == "__main__":
    main()

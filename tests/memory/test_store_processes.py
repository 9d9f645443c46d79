"""MemoryStore across processes: concurrent writers and writers killed mid-write."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memory.store import ENTRY_DELIMITER, MemoryStore, parse_entries

REPO_ROOT = Path(__file__).resolve().parents[2]

WRITER_SCRIPT = """
import sys
from pathlib import Path
from memory.store import MemoryStore

path, worker, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = MemoryStore(path, path.with_name("USER.md"), memory_char_limit=1_000_000)
store.load_from_disk()
start = path.with_name("start")
import time
while not start.exists():
    time.sleep(0.001)
for i in range(count):
    result = store.add("memory", f"worker {worker} entry {i}")
    if not result["success"]:
        sys.exit(f"add failed: {result['message']}")
"""


def read_file_entries(path: Path) -> list[str]:
    return parse_entries(path.read_text(encoding="utf-8"))


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    workers, per_worker = 8, 50
    path = tmp_path / "memories" / "MEMORY.md"
    path.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, str(path), str(w), str(per_worker)],
            cwd=REPO_ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    time.sleep(0.5)  # let every interpreter start, then release them together
    (path.parent / "start").touch()
    for proc in procs:
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr

    entries = read_file_entries(path)
    expected = {f"worker {w} entry {i}" for w in range(workers) for i in range(per_worker)}
    assert len(entries) == workers * per_worker
    assert set(entries) == expected
    assert path.read_text(encoding="utf-8") == ENTRY_DELIMITER.join(entries)
    for w in range(workers):  # each writer's own entries stay in its order
        own = [e for e in entries if e.startswith(f"worker {w} ")]
        assert own == [f"worker {w} entry {i}" for i in range(per_worker)]
    assert list(path.parent.glob(".mem_*")) == []


FIXED = ["User's name is Ada", "Server runs Ubuntu 22.04", "Prefers short answers"]


def count_forever(path: Path, progress: Any) -> None:
    """Child: replace counter=N by counter=N+1 until killed; record each committed N."""
    store = MemoryStore(path, path.with_name("USER.md"))
    store.load_from_disk()
    n = progress.value
    while True:
        result = store.replace("memory", f"counter={n}", f"counter={n + 1}")
        if not result["success"]:
            os._exit(3)
        n += 1
        progress.value = n


def test_killed_writer_leaves_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "memories" / "MEMORY.md"
    store = MemoryStore(path, tmp_path / "memories" / "USER.md")
    store.load_from_disk()
    for entry in [*FIXED, "counter=0"]:
        assert store.add("memory", entry)["success"]

    ctx = multiprocessing.get_context("fork")
    # No lock: a child killed while holding it would block the parent's reads.
    progress: Any = ctx.RawValue("q", 0)
    rng = random.Random(1234)
    for _ in range(50):
        committed = progress.value
        child = ctx.Process(target=count_forever, args=(path, progress))
        child.start()
        started = time.monotonic()  # on a busy machine: wait for a first write, then kill
        while progress.value == committed and time.monotonic() - started < 20:
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL

        entries = read_file_entries(path)
        last = progress.value
        assert last >= committed
        # The last write either reached the rename (counter=last + 1) or it did not.
        assert entries in ([*FIXED, f"counter={last}"], [*FIXED, f"counter={last + 1}"])
        progress.value = int(entries[-1].removeprefix("counter="))

    assert progress.value > 50  # the children really wrote
    result = store.add("memory", "after the crashes")
    assert result["success"]
    assert result["entries"][:3] == FIXED
    assert list(path.parent.glob(".mem_*.tmp")) == []

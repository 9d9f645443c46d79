"""How many turn syncs one ``chorus worker`` runs a second.

Run: uv run python bench/worker.py [jobs] [concurrency]

A real redis-server and a temp CHORUS_HOME with an instant memory provider;
``jobs`` sessions each get one turn in SessionDB and one ``sync_turn`` job on the
queue, then ``chorus worker --burst`` runs them all. Prints the jobs per second
(with and without the worker's start-up) and writes ``bench/results/worker.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.jobs import JobScheduler  # noqa: E402
from memory.jobs import JobState, Outbox, RQQueue  # noqa: E402
from memory.paths import ChorusPaths  # noqa: E402
from memory.transcripts import SessionDB  # noqa: E402
from tests.fakes.redis_server import RedisServer  # noqa: E402

PLUGIN = textwrap.dedent(
    '''
    from memory.providers import MemoryProvider


    class InstantProvider(MemoryProvider):
        """Takes every call and does nothing: the worker's own cost is what is measured."""

        @property
        def name(self):
            return "instant"

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            pass

        def get_tool_schemas(self):
            return []

        def sync_turn(self, user_content, assistant_content, **kwargs):
            pass
    '''
)


def prepare(home: Path, jobs: int) -> None:
    plugin = home / "plugins" / "instant"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    db = SessionDB(ChorusPaths(home).state_db)
    for n in range(jobs):
        session = f"s{n}"
        db.create_session(session, platform="telegram", user_key=f"telegram:{n}")
        db.append_message(session, "user", f"hello number {n}")
        db.append_message(session, "assistant", f"answer number {n}")
    db.close()


def main(jobs: int, concurrency: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as redis_server:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        prepare(home, jobs)
        state_db = ChorusPaths(home).state_db
        queue = RQQueue(redis_server.url, outbox=Outbox(state_db))
        scheduler = JobScheduler(queue, JobState(state_db))
        for n in range(jobs):
            scheduler.sync_turn(f"s{n}", 1)
        queue.close(5)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
        env.update(
            CHORUS_HOME=str(home),
            CHORUS_REDIS__URL=redis_server.url,
            CHORUS_MEMORY__PROVIDER="instant",
            OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        )
        chorus = Path(sys.executable).with_name("chorus")
        started = time.perf_counter()
        probe = subprocess.run(
            [str(chorus), "worker", "--burst", "--concurrency", "1"],
            env={**env, "CHORUS_REDIS__QUEUE_NAME": "empty"},
            check=True,
            capture_output=True,
        )
        startup = time.perf_counter() - started
        started = time.perf_counter()
        run = subprocess.run(
            [str(chorus), "worker", "--burst", "--concurrency", str(concurrency)],
            env=env,
            capture_output=True,
        )
        wall = time.perf_counter() - started
        if run.returncode != 0:
            raise SystemExit(run.stderr.decode(errors="replace") + probe.stderr.decode())
        done = JobState(state_db)
        synced = sum(done.is_done(f"sync:s{n}:1") for n in range(jobs))
        done.close()
    return {
        "jobs": float(jobs),
        "synced": float(synced),
        "concurrency": float(concurrency),
        "wall_seconds": wall,
        "startup_seconds": startup,
        "jobs_per_second": jobs / wall,
        "jobs_per_second_after_startup": jobs / max(wall - startup, 1e-9),
    }


if __name__ == "__main__":
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    result = main(jobs, concurrency)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value:,.2f}")
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results"))
    out.mkdir(exist_ok=True)
    (out / "worker.json").write_text(json.dumps(result, indent=2) + "\n")

"""The mem0 provider across processes: two processes on one home, and a process without mem0.

Qdrant local storage admits one open client at a time, in any process; the
provider opens and closes it per operation under a file lock, so the gateway
and a worker can serve the same person at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.mem0._oss import LOCK_FILE, file_lock
from tests.fakes import FakeOpenAI
from tests.fakes.mem0_platform import mem0_responder
from tests.plugins.test_mem0 import open_provider, oss_config

ROOT = Path(__file__).resolve().parents[2]
USER = "telegram:1"

CHILD = r"""
import json, sys, time
from pathlib import Path
from plugins.memory import load_memory_provider

home, name, context, go = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
config = json.loads(sys.argv[5])
provider = load_memory_provider("mem0", home)
provider.initialize(f"session-{name}", chorus_home=home, platform="telegram",
                    user_key="telegram:1", agent_context=context, config=config)
(go.parent / f"{name}.ready").write_text("ready")
deadline = time.monotonic() + 120
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit("never told to go")
    time.sleep(0.01)
done = []
for i in range(3):
    fact = f"The code word {name}{i} means blue."
    if context == "background":
        provider.sync_turn(fact, "Noted.")
        provider.queue_prefetch(f"code word {name}{i}")
        done.append(fact)
    else:
        added = json.loads(provider.handle_tool_call("mem0_add", {"content": fact}))
        assert added["success"], added
        query = {"query": f"code word {name}{i}", "limit": 20}
        found = json.loads(provider.handle_tool_call("mem0_search", query))
        assert found["success"], found
        done.append([r["memory"] for r in found["results"]])
provider.shutdown()
print(json.dumps(done))
"""

UNAVAILABLE = r"""
import json, sys
sys.modules["mem0"] = None  # as if mem0ai were not installed
from pathlib import Path
from plugins.memory import discover_memory_providers, load_memory_provider

home = Path(sys.argv[1])
listed = {info.name: info for info in discover_memory_providers(home)}["mem0"]
provider = load_memory_provider("mem0", home)
out = {"listed": listed.available, "available": provider.is_available(),
       "reason": provider.unavailable_reason}
try:
    provider.initialize("s", chorus_home=home, platform="telegram", user_key="telegram:1",
                        agent_context="primary", config={"openai_base_url": "http://127.0.0.1:9/v1"})
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def child_env(fake_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEM0_")}
    env["HOME"] = str(fake_home)
    return env


def test_qdrant_local_storage_admits_one_client_at_a_time(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient

    first = QdrantClient(path=str(tmp_path / "qdrant"))
    with pytest.raises(RuntimeError, match="already accessed by another instance"):
        QdrantClient(path=str(tmp_path / "qdrant"))
    first.close()
    QdrantClient(path=str(tmp_path / "qdrant")).close()


def test_two_processes_share_one_home(tmp_path: Path, server: FakeOpenAI) -> None:
    server.responder(mem0_responder)
    home, fake_home, go = tmp_path / "home", tmp_path / "user-home", tmp_path / "go"
    fake_home.mkdir()
    config = json.dumps(oss_config(server))
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(home), name, context, str(go), config],
            cwd=ROOT,
            env=child_env(fake_home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, context in (("gateway", "primary"), ("worker", "background"))
    ]
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"{n}.ready").exists() for n in ("gateway", "worker")):
            assert all(c.poll() is None for c in children), [c.communicate() for c in children]
            assert time.monotonic() < deadline, "the children did not start"
            time.sleep(0.05)
        go.write_text("go")
        outputs = [c.communicate(timeout=180) for c in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    for child, (_, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
    gateway = json.loads(outputs[0][0])
    assert all(f"The code word gateway{i} means blue." in found for i, found in enumerate(gateway))
    assert not (fake_home / ".mem0").exists()  # mem0's own files went under the home
    assert (home / "providers" / "mem0" / ".mem0" / "config.json").is_file()

    reader = open_provider(home, server, context="primary")
    try:
        found = json.loads(
            reader.handle_tool_call("mem0_search", {"query": "code word means blue", "limit": 20})
        )
        memories = {r["memory"] for r in found["results"]}
        expected = {
            f"The code word {n}{i} means blue." for n in ("gateway", "worker") for i in range(3)
        }
        assert memories == expected
    finally:
        reader.shutdown()


def test_prefetch_uses_the_warm_recall_while_another_process_writes(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    server.responder(mem0_responder)
    home = tmp_path / "home"
    worker = open_provider(home, server, context="background")
    gateway = open_provider(home, server, context="primary")
    try:
        worker.sync_turn("I water the ferns every Monday.", "Noted.")
        worker.queue_prefetch("when do I water the ferns")
        store = home / "providers" / "mem0" / "users" / "telegram" / "1"
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:  # a separate open file: conflicts like another process would
            with file_lock(store / LOCK_FILE, 1.0):
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(5)
        started = time.monotonic()
        assert gateway.prefetch("ferns Monday") == "- I water the ferns every Monday."
        assert time.monotonic() - started < 2
        assert gateway.breaker.failures == 0  # a busy store is not a failure of mem0
        release.set()
        holder.join()
        assert "ferns" in gateway.prefetch("ferns Monday")
    finally:
        worker.shutdown()
        gateway.shutdown()


def test_without_mem0_the_provider_says_how_to_install_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", UNAVAILABLE, str(tmp_path / "home")],
        cwd=ROOT,
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert out["listed"] is False and out["available"] is False
    assert "pip install 'chorus[mem0]'" in out["reason"]
    assert (
        out["error"].startswith("Mem0Unavailable") and "pip install 'chorus[mem0]'" in out["error"]
    )

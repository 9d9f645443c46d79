"""Two processes on one real redis-server spend one person's budget at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from memory.usage_ledger import UsageLedger
from tests.fakes import FakeOpenAI
from tests.fakes.openai_server import Reply
from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]

LIMIT = 3_000
CALL = 150  # tokens each call reports


def test_two_processes_stop_within_one_call_of_the_limit(
    tmp_path: Path, server: FakeOpenAI, redis_server: RedisServer
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    server.responder(
        lambda _: Reply.of_text("ok", usage={"prompt_tokens": 100, "completion_tokens": 50})
    )
    env = {
        **os.environ,
        "CHORUS_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "CHORUS_REDIS__URL": redis_server.url,
        "CHORUS_BUDGETS__USER__TOKENS_PER_DAY": str(LIMIT),
    }
    spenders = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.budgets.spender", str(home), "3"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    deadline = time.monotonic() + 90
    while len(list(home.glob("ready-*"))) < 2:  # both connected: they start together
        assert time.monotonic() < deadline, "the spenders did not get ready"
        assert all(proc.poll() is None for proc in spenders), "a spender died"
        time.sleep(0.05)
    (home / "go").touch()
    made = []
    for proc in spenders:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        made.append(int(out.decode().split()[-1]))
    assert all(n > 0 for n in made), made  # both spent (each makes its first call first)
    calls = sum(made)
    assert calls == len(server.requests)
    assert LIMIT <= calls * CALL <= LIMIT + CALL, (made, calls * CALL)
    with UsageLedger(home / "state.db") as ledger:  # every call is in the shared ledger
        assert ledger.totals("telegram:7", 0)[0] == calls * CALL

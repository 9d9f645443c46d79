"""The settings holder a reload updates, and the watcher that reloads a worker."""

from __future__ import annotations

import os
from pathlib import Path

from agent import jobs
from gateway.app import job_context
from gateway.app._background import update_job_context
from gateway.config import ConfigWatcher, LiveSettings, load_settings


def write(home: Path, text: str) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)


def test_replace_keeps_what_needs_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    live = LiveSettings(load_settings(home, {}))
    seen: list[int] = []
    live.subscribe(lambda s: seen.append(s.memory.user_char_limit))
    write(home, "memory:\n  user_char_limit: 99\n  provider: other\nllm:\n  model: m2\n")
    pending = live.replace(load_settings(home, {}))
    assert live.current.memory.user_char_limit == 99 and seen == [99]
    assert live.current.memory.provider is None and live.current.llm.model == "gpt-4o-mini"
    assert sorted(pending) == ["llm.model", "memory.provider"]


def test_a_worker_picks_up_an_edited_config_before_its_next_job(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home, "memory:\n  shared_writes: review\n  flush_min_turns: 6\n")
    settings = load_settings(home, {})
    live = LiveSettings(settings)
    context = job_context(live)
    live.subscribe(lambda fresh: update_job_context(context, fresh))
    watcher = ConfigWatcher(live, lambda: load_settings(home, {}))
    jobs.configure(context, refresh=watcher.check)
    try:
        assert jobs.context().config.memory.shared_writes == "review"
        write(home, "memory:\n  shared_writes: admins\n  flush_min_turns: 2\n")
        os.utime(home / "config.yaml", ns=(1, 1))  # a new stamp even within one clock tick
        gate = jobs.context().shared_write_gate("s1", "telegram:5")
        assert jobs.context().config.memory.flush_min_turns == 2
        assert gate.policy() == "admins"
        write(home, "memory:\n  flush_min_turns: lots\n")
        os.utime(home / "config.yaml", ns=(2, 2))
        assert jobs.context().config.memory.flush_min_turns == 2  # a bad edit changes nothing
        assert not watcher.check()
    finally:
        jobs.configure(context)
        context.close()

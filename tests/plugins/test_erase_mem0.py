"""The mem0 provider exports and erases one person's memories: on the platform and in process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.mem0_platform import FakeMem0Platform, mem0_responder
from tests.plugins.test_mem0 import open_provider
from tests.plugins.test_mem0_platform import ALICE, BOB, open_platform


@pytest.fixture
def platform() -> Iterator[FakeMem0Platform]:
    with FakeMem0Platform() as fake:
        yield fake


def test_platform_export_and_forget(tmp_path: Path, platform: FakeMem0Platform) -> None:
    alice = open_platform(tmp_path, platform, ALICE)
    alice.sync_turn("I love dark roast coffee. My PIN hint is blue heron.", "Noted!")
    alice.sync_turn("Bob keeps bees.", "Nice.", speaker=BOB)
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert sorted(m["text"] for m in exported["memories"]) == [
        "I love dark roast coffee.",
        "My PIN hint is blue heron.",
    ]
    alice.queue_prefetch("coffee")  # a warm recall cached on disk
    result = alice.forget_user(ALICE)
    assert result.erased and result.removed == 2
    assert platform.memories_of(ALICE) == []
    assert platform.memories_of(BOB) == ["Bob keeps bees."]
    assert ("DELETE", "/v1/memories/") in [(m, p) for m, p, _ in platform.requests]
    assert not (tmp_path / "providers" / "mem0" / "users" / "telegram" / "1").exists()
    alice.shutdown()


def test_oss_export_and_forget(tmp_path: Path, server: FakeOpenAI) -> None:
    server.responder(mem0_responder)
    alice = open_provider(tmp_path, server)
    alice.sync_turn("I love dark roast coffee. My PIN hint is blue heron.", "Noted!")
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert sorted(m["text"] for m in exported["memories"]) == [
        "I love dark roast coffee.",
        "My PIN hint is blue heron.",
    ]
    result = alice.forget_user(ALICE)
    assert result.erased and result.removed == 2
    user_dir = tmp_path / "providers" / "mem0" / "users" / "telegram" / "1"
    assert not user_dir.exists()
    assert alice.export_user(ALICE) == {"memories": []}
    alice.shutdown()

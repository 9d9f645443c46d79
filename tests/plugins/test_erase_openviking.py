"""OpenViking: a person's memories and sessions are exported and deleted; no one else's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.memory.openviking._ops import ov_user
from tests.fakes.openviking_server import FakeOpenViking
from tests.plugins.test_openviking import ALICE, BOB, open_ov


@pytest.fixture
def ov() -> Iterator[FakeOpenViking]:
    with FakeOpenViking() as fake:
        yield fake


def test_export_then_forget(tmp_path: Path, ov: FakeOpenViking) -> None:
    alice = open_ov(tmp_path, ov)
    alice.sync_turn("My PIN hint is blue heron.", "Noted.")
    alice.on_session_end([])
    bob = open_ov(tmp_path, ov, user_key=BOB)
    bob.sync_turn("Bob keeps bees.", "Nice.")
    bob.on_session_end([])
    alice.sync_turn("My sister Anna lives in Lisbon.", "Nice.")  # batched locally, not sent
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert [m["text"] for m in exported["memories"]] == ["My PIN hint is blue heron."]
    assert len(exported["sessions"]) == 1

    result = alice.forget_user(ALICE)
    assert result.erased and result.removed == 2
    assert ov.memories_of(ov_user(ALICE)) == []
    assert not [k for k in ov.sessions if k[0] == ov_user(ALICE)]
    assert ov.memories_of(ov_user(BOB)) == ["Bob keeps bees."]
    assert not (tmp_path / "providers" / "openviking" / "users" / "telegram" / "1").exists()
    assert alice.forget_user(ALICE).erased
    alice.shutdown()
    bob.shutdown()

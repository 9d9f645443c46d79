"""Supermemory: the documents of a person's container tag are exported and deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.memory.supermemory._tags import container_tag
from tests.fakes.supermemory_server import FakeSupermemory
from tests.plugins.test_supermemory import ALICE, BOB, call, end_session, open_provider


@pytest.fixture
def sm() -> Iterator[FakeSupermemory]:
    with FakeSupermemory() as fake:
        yield fake


def test_export_then_forget(tmp_path: Path, sm: FakeSupermemory) -> None:
    alice = open_provider(tmp_path, sm, context="primary")
    call(alice, "supermemory_store", content="My PIN hint is blue heron.")
    call(alice, "supermemory_store", speaker=BOB, content="Bob keeps bees.")
    worker = open_provider(tmp_path, sm)
    worker.sync_turn("My sister Anna lives in Lisbon.", "Nice.")
    worker.shutdown()
    end_session(tmp_path, sm, ALICE, "s1")
    exported = alice.export_user(ALICE)
    assert exported is not None
    texts = " ".join(m["text"] for m in exported["memories"])
    assert "blue heron" in texts and "Anna lives in Lisbon" in texts and "bees" not in texts

    result = alice.forget_user(ALICE)
    assert result.erased and result.removed == 2
    assert sm.memories_of(container_tag(ALICE)) == []
    assert sm.documents_of(container_tag(ALICE)) == []
    assert sm.memories_of(container_tag(BOB)) == ["Bob keeps bees."]
    assert not (tmp_path / "providers" / "supermemory" / "users" / "telegram" / "1").exists()
    alice.shutdown()

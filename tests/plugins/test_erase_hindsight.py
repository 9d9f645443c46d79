"""Hindsight: a person's bank is exported and deleted whole; no one else's is touched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.hindsight_server import FakeHindsight
from tests.plugins.test_hindsight import ALICE, ALICE_BANK, call, open_provider

BOB_BANK = "chorus-telegram_3a2"


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


def test_export_then_forget(tmp_path: Path, fake: FakeHindsight) -> None:
    alice = open_provider(tmp_path, fake)
    call(alice, "hindsight_retain", content="My PIN hint is blue heron.")
    call(alice, "hindsight_retain", speaker="telegram:2", content="Bob keeps bees.")
    alice.sync_turn("My sister Anna lives in Lisbon.", "Nice.")  # buffered on disk
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert [m["text"] for m in exported["memories"]] == ["My PIN hint is blue heron."]

    result = alice.forget_user(ALICE)
    assert result.erased and result.removed == 1
    assert fake.facts(ALICE_BANK) == [] and ALICE_BANK not in fake.banks
    assert fake.facts(BOB_BANK) == ["Bob keeps bees."]
    assert not (tmp_path / "providers" / "hindsight" / "users" / "telegram" / "1").exists()
    assert alice.forget_user(ALICE).erased  # twice is fine
    alice.shutdown()

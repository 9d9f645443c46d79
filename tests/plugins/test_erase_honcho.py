"""Honcho: a person's card and conclusions are exported and deleted; what Honcho cannot
delete (their messages) is said, never claimed gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.honcho_server import FakeHoncho
from tests.plugins.test_honcho import ALICE, ALICE_PEER, call, open_provider

BOB = "telegram:2"


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


def test_export_then_forget(tmp_path: Path, fake: FakeHoncho) -> None:
    alice = open_provider(tmp_path, fake)
    alice.sync_turn("My sister Anna lives in Lisbon.", "Nice.")
    call(alice, "honcho_conclude", conclusion="Alice's PIN hint is blue heron")
    call(alice, "honcho_conclude", speaker=BOB, conclusion="Bob keeps bees")
    fake.set_card(ALICE_PEER, ["Name: Alice"])
    alice.prefetch("Anna")
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert exported["card"] == ["Name: Alice"]
    texts = [m["text"] for m in exported["memories"]]
    assert "Alice's PIN hint is blue heron" in texts and "Bob keeps bees" not in texts

    result = alice.forget_user(ALICE)
    assert not result.erased and "messages" in result.reason
    assert fake.conclusions_of(ALICE_PEER) == []
    assert fake.conclusions_of("telegram_3a2") == ["Bob keeps bees"]
    again = alice.export_user(ALICE)
    assert again is not None and again["card"] == [] and again["memories"] == []
    assert not (tmp_path / "providers" / "honcho" / "users" / "telegram" / "1").exists()
    alice.shutdown()

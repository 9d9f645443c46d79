"""ByteRover: the person's context tree is exported and removed with their directory."""

from __future__ import annotations

from pathlib import Path

from tests.plugins.test_byterover import ALICE, BOB, brv, call, open_provider, workdir

__all__ = ["brv"]


def test_export_then_forget(tmp_path: Path, brv: Path) -> None:
    home = tmp_path / "home"
    alice = open_provider(home, context="primary")
    call(alice, "brv_curate", content="Alice's PIN hint is blue heron.")
    call(alice, "brv_curate", speaker=BOB, content="Bob keeps bees.")
    exported = alice.export_user(ALICE)
    assert exported is not None
    assert any("blue heron" in m["text"] for m in exported["memories"])
    assert not any("bees" in m["text"] for m in exported["memories"])

    result = alice.forget_user(ALICE)
    assert result.erased and result.removed >= 1
    assert not workdir(home, ALICE).exists()
    assert any("bees" in p.read_text() for p in workdir(home, BOB).rglob("*") if p.is_file())
    assert alice.export_user(ALICE) == {"memories": []}
    alice.shutdown()

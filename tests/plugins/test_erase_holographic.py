"""The holographic provider exports and erases one person's facts, and only theirs."""

from __future__ import annotations

from pathlib import Path

from tests.plugins.holographic_cases import open_provider, tool


def _user_dir(home: Path, uid: str) -> Path:
    return home / "providers" / "holographic" / "users" / "telegram" / uid


def test_export_returns_the_persons_facts_and_no_one_elses(tmp_path: Path) -> None:
    provider = open_provider(tmp_path, "telegram:1")
    tool(provider, action="add", content="I prefer dark roast coffee.")
    tool(provider, action="add", content="My sister Anna lives in Lisbon.")
    tool(provider, action="add", content="Bob keeps bees.", speaker="telegram:2")
    exported = provider.export_user("telegram:1")
    assert exported is not None
    texts = sorted(m["text"] for m in exported["memories"])
    assert texts == ["I prefer dark roast coffee.", "My sister Anna lives in Lisbon."]
    provider.shutdown()


def test_forget_user_leaves_nothing_of_the_person(tmp_path: Path) -> None:
    provider = open_provider(tmp_path, "telegram:1")
    tool(provider, action="add", content="My PIN hint is blue-heron-42.")
    tool(provider, action="add", content="Bob keeps bees.", speaker="telegram:2")
    result = provider.forget_user("telegram:1")
    assert result.erased and result.removed >= 1
    assert not _user_dir(tmp_path, "1").exists()
    leftovers = [p for p in (tmp_path / "providers").rglob("*") if p.is_file()]
    assert all(b"blue-heron" not in p.read_bytes() for p in leftovers)
    assert [m["text"] for m in provider.export_user("telegram:2")["memories"]] == [  # type: ignore[index]
        "Bob keeps bees."
    ]
    # a second erasure finds nothing and still succeeds; the store starts clean
    assert provider.forget_user("telegram:1").erased
    assert provider.export_user("telegram:1") == {"memories": []}
    provider.shutdown()

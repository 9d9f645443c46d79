"""Staged writes to the shared MEMORY.md, on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memory.database import Location
from memory.store import MemoryStore, StagedWrites
from memory.store._staged import MAX_PENDING_PER_USER, StagingRefused

pytest_plugins = ["tests.fakes.tables_backends"]


def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "MEMORY.md", tmp_path / "USER.md")


def test_writes_are_staged_listed_and_decided(where: Location, tmp_path: Path) -> None:
    with StagedWrites(where) as staging:
        first = staging.stage(
            user_key="telegram:5", session_id="s1", action="add", content="Wifi: Nimbus", at=10.0
        )
        second = staging.stage(
            user_key="telegram:6", session_id="s2", action="add", content="Printer on floor 2"
        )
        third = staging.stage(
            user_key="telegram:6", session_id="s2", action="remove", old_text="Old note"
        )
        assert 0 < first < second < third
        assert [w.id for w in staging.pending()] == [first, second, third]
        assert staging.count_pending() == 3
        write = staging.get(first)
        assert write is not None
        assert (write.user_key, write.session_id, write.action, write.content) == (
            "telegram:5",
            "s1",
            "add",
            "Wifi: Nimbus",
        )
        assert (write.old_text, write.created_at, write.status) == ("", 10.0, "pending")
        assert (write.decided_by, write.decided_at, write.result) == (None, None, None)
        assert staging.get(10_000) is None

        ok, message = staging.approve(first, store(tmp_path), by="telegram:1")
        assert ok and message.startswith(f"#{first} approved")
        assert "Wifi: Nimbus" in (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
        assert staging.reject(second, by="telegram:1") == (True, f"#{second} rejected")
        assert staging.reject(second, by="telegram:1")[0] is False  # decided once
        assert staging.approve(first, store(tmp_path), by="telegram:1")[0] is False
        ok, message = staging.approve(third, store(tmp_path), by="telegram:1")
        assert not ok and f"#{third} failed" in message  # nothing to remove
    with StagedWrites(where) as reopened:
        assert reopened.pending() == [] and reopened.count_pending() == 0
        decided = [reopened.get(n) for n in (first, second, third)]
        assert [w.status if w else None for w in decided] == ["approved", "rejected", "failed"]
        approved = decided[0]
        assert approved is not None and approved.decided_by == "telegram:1"
        assert isinstance(approved.decided_at, float) and approved.result


def test_staging_is_limited_per_user_and_by_length(where: Location) -> None:
    with StagedWrites(where) as staging:
        for n in range(MAX_PENDING_PER_USER):
            staging.stage(user_key="telegram:5", session_id="s", action="add", content=f"n{n}")
        with pytest.raises(StagingRefused, match=f"{MAX_PENDING_PER_USER} notes"):
            staging.stage(user_key="telegram:5", session_id="s", action="add", content="more")
        assert staging.count_pending() == MAX_PENDING_PER_USER  # the refused one left nothing
        staging.stage(user_key="telegram:6", session_id="s", action="add", content="other user")
        with pytest.raises(StagingRefused, match="characters"):
            staging.stage(user_key="telegram:6", session_id="s", action="add", content="x" * 2201)
        first = staging.pending()[0]
        assert staging.reject(first.id, by="telegram:1")[0]
        staging.stage(user_key="telegram:5", session_id="s", action="add", content="room again")
        assert staging.count_pending() == MAX_PENDING_PER_USER + 1


def test_which_writes_were_shown_whole_is_kept(where: Location) -> None:
    with StagedWrites(where) as staging:
        first = staging.stage(user_key="telegram:5", session_id="s", action="add", content="a")
        second = staging.stage(user_key="telegram:5", session_id="s", action="add", content="b")
        assert staging.shown() == set()
        staging.mark_shown([first])
        staging.mark_shown([first, second])  # shown again: no error, no duplicate
        assert staging.shown() == {first, second}
        with pytest.raises(StagingRefused, match="separates entries"):
            staging.stage(user_key="telegram:5", session_id="s", action="add", content="a\n§\nb")


def test_the_limit_holds_for_racing_stages(where: Location) -> None:
    with StagedWrites(where) as staging:
        refused: list[str] = []
        start = threading.Barrier(6)

        def stage(n: int) -> None:
            start.wait()
            for k in range(3):
                try:
                    staging.stage(
                        user_key="telegram:5", session_id="s", action="add", content=f"{n}-{k}"
                    )
                except StagingRefused as exc:
                    refused.append(str(exc))

        threads = [threading.Thread(target=stage, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert staging.count_pending() == MAX_PENDING_PER_USER
        assert len(refused) == 18 - MAX_PENDING_PER_USER


def test_two_replicas_share_the_staged_writes(postgres_url: str, tmp_path: Path) -> None:
    with StagedWrites(postgres_url) as gateway, StagedWrites(postgres_url) as worker:
        staged = worker.stage(user_key="telegram:5", session_id="s", action="add", content="Hi")
        assert [w.id for w in gateway.pending()] == [staged]
        assert gateway.approve(staged, store(tmp_path), by="telegram:1")[0]
        assert worker.count_pending() == 0
        for n in range(MAX_PENDING_PER_USER):
            (gateway if n % 2 else worker).stage(
                user_key="telegram:6", session_id="s", action="add", content=f"n{n}"
            )
        with pytest.raises(StagingRefused):
            gateway.stage(user_key="telegram:6", session_id="s", action="add", content="more")


def test_a_write_to_a_shared_profile_is_applied_to_that_profile(
    where: Location, tmp_path: Path
) -> None:
    profiles: list[str] = []

    def profile_store(key: str) -> MemoryStore:
        profiles.append(key)
        return MemoryStore(tmp_path / "MEMORY.md", tmp_path / "group" / "USER.md")

    with StagedWrites(where) as staging:
        shared = staging.stage(user_key="telegram:5", session_id="s", action="add", content="A")
        staged = staging.stage(
            user_key="telegram:5",
            session_id="s",
            action="add",
            content="Group: tabs",
            profile="telegram#chat:-100",
        )
        write = staging.get(staged)
        assert write is not None and (write.target, write.profile) == ("user", "telegram#chat:-100")
        assert [(w.id, w.target) for w in staging.pending()] == [
            (shared, "memory"),
            (staged, "user"),
        ]
        ok, message = staging.approve(staged, store(tmp_path), by="telegram:1")
        assert not ok and "profile" in message
        assert staging.count_pending() == 2
        ok, _ = staging.approve(
            staged, store(tmp_path), by="telegram:1", profile_store=profile_store
        )
        assert ok and profiles == ["telegram#chat:-100"]
    assert "Group: tabs" in (tmp_path / "group" / "USER.md").read_text(encoding="utf-8")
    assert not (tmp_path / "USER.md").exists()
    assert not (tmp_path / "MEMORY.md").exists()

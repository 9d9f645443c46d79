"""MemoryStore: entries, limits, results, the frozen snapshot and where the files are kept.

The behaviour tests run on both backends (``files``: plain files on disk, the
default; ``postgres``: ``PostgresMemoryFiles`` on a real, throwaway database);
the tests of lock files, temp files and permissions are for the disk alone.
"""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import log_content
from memory.store import (
    ENTRY_DELIMITER,
    DiskMemoryFiles,
    MemoryStore,
    PostgresMemoryFiles,
    parse_entries,
)

pytest_plugins = ["tests.fakes.postgres_fixtures"]

SEP = "═" * 46


class Backend:
    """Makes stores on one backend and reads or hand-edits the files behind them."""

    def __init__(self, root: Path, pg: PostgresMemoryFiles | None) -> None:
        self.root = root
        self.pg = pg

    def make(self, memory_limit: int = 2200, user_limit: int = 1375) -> MemoryStore:
        store = MemoryStore(
            self.root / "memories" / "MEMORY.md",
            self.root / "memories" / "users" / "telegram" / "42" / "USER.md",
            memory_char_limit=memory_limit,
            user_char_limit=user_limit,
            files=self.pg,
        )
        store.load_from_disk()
        return store

    def text(self, path: Path) -> str | None:
        """The file's whole text, as on disk; None if it does not exist."""
        if self.pg is not None:
            return self.pg.read_text(self.pg.name_of(path))
        return path.read_text(encoding="utf-8") if path.exists() else None

    def put_text(self, path: Path, text: str) -> None:
        """A hand edit of the file, behind the store's back."""
        if self.pg is not None:
            self.pg.write_text(self.pg.name_of(path), text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def put(self, path: Path, entries: list[str]) -> None:
        self.put_text(path, ENTRY_DELIMITER.join(entries))


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "files":
        yield Backend(tmp_path, None)
        return
    url: str = request.getfixturevalue("postgres_url")
    pg = PostgresMemoryFiles(url, tmp_path / "memories")
    try:
        yield Backend(tmp_path, pg)
    finally:
        pg.close()


@pytest.fixture
def store(backend: Backend) -> MemoryStore:
    return backend.make()


@pytest.fixture
def disk_store(tmp_path: Path) -> MemoryStore:
    """A store on the plain files, for what only the disk backend has."""
    return Backend(tmp_path, None).make()


# -- reading --------------------------------------------------------------


def test_missing_files_mean_no_entries(store: MemoryStore) -> None:
    assert store.memory_entries == []
    assert store.user_entries == []
    assert store.format_for_system_prompt("memory") is None
    assert store.format_for_system_prompt("user") is None
    assert store.format_for_system_prompt("other") is None


def test_parse_strips_entries_and_drops_empty_ones() -> None:
    text = "  first  \n§\n\n§\n   \n§\nsecond\nline two\n§\n"
    assert parse_entries(text) == ["first", "second\nline two"]
    assert parse_entries("") == []


def test_load_reads_hand_edited_files(backend: Backend) -> None:
    store = backend.make()
    backend.put_text(store.memory_path, "a\n§\n  \n§\nb\n")
    store.load_from_disk()
    assert store.memory_entries == ["a", "b"]


# -- add ------------------------------------------------------------------


def test_add_writes_entries_to_disk(backend: Backend, store: MemoryStore) -> None:
    first = store.add("memory", "Server runs Ubuntu 22.04")
    second = store.add("memory", "  Deploys go through GitHub Actions \n")
    assert first["success"] and second["success"]
    assert second == {
        "success": True,
        "target": "memory",
        "message": "Entry added.",
        "entries": ["Server runs Ubuntu 22.04", "Deploys go through GitHub Actions"],
        "usage": "2% — 60/2,200 chars",
    }
    assert backend.text(store.memory_path) == (
        "Server runs Ubuntu 22.04\n§\nDeploys go through GitHub Actions"
    )
    assert store.memory_entries == second["entries"]
    json.dumps(second)


def test_add_to_user_uses_user_file(backend: Backend, store: MemoryStore) -> None:
    result = store.add("user", "Name: Ada")
    assert result["usage"] == "0% — 9/1,375 chars"
    assert backend.text(store.user_path) == "Name: Ada"
    assert backend.text(store.memory_path) is None
    assert store.user_entries == ["Name: Ada"]
    assert store.memory_entries == []


def test_files_and_directories_are_private(disk_store: MemoryStore) -> None:
    store = disk_store
    store.add("user", "Name: Ada")
    store.add("memory", "Shared fact")
    for path in (store.user_path, store.memory_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        lock = path.with_name(path.name + ".lock")
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    for directory in (store.user_path.parent, store.user_path.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.memory_path.parent.stat().st_mode) == 0o700


def test_duplicate_add_is_a_successful_no_op(backend: Backend, store: MemoryStore) -> None:
    store.add("memory", "Fact one")
    before = backend.text(store.memory_path)
    result = store.add("memory", "  Fact one ")
    assert result["success"] is True
    assert "already exists" in result["message"]
    assert result["entries"] == ["Fact one"]
    assert backend.text(store.memory_path) == before


@pytest.mark.parametrize("content", ["", "   ", "\n\t\n"])
def test_empty_content_is_refused(backend: Backend, store: MemoryStore, content: str) -> None:
    store.add("memory", "Fact one")
    for result in (store.add("memory", content), store.replace("memory", "Fact", content)):
        assert result["success"] is False
        assert "empty" in result["message"].lower()
        assert result["entries"] == ["Fact one"]
    assert backend.text(store.memory_path) == "Fact one"


@pytest.mark.parametrize("content", ["a\n§\nb", "§", "first\n§", "§\nlast", "x\n§\n§\ny"])
def test_content_with_delimiter_line_is_refused(
    backend: Backend, store: MemoryStore, content: str
) -> None:
    result = store.add("memory", content)
    assert result["success"] is False
    assert "separates entries" in result["message"]
    assert backend.text(store.memory_path) is None


def test_section_sign_inside_a_line_is_fine(backend: Backend, store: MemoryStore) -> None:
    assert store.add("memory", "See § 4\n §  \nend")["success"]
    fresh = backend.make()
    assert fresh.memory_entries == ["See § 4\n §  \nend"]


@pytest.mark.parametrize("action", ["add", "replace", "remove"])
def test_unknown_target_is_refused(backend: Backend, store: MemoryStore, action: str) -> None:
    if action == "add":
        result = store.add("notes", "Fact")
    elif action == "replace":
        result = store.replace("notes", "Fact", "Fact two")
    else:
        result = store.remove("notes", "Fact")
    assert result == {
        "success": False,
        "target": "notes",
        "message": "Unknown target 'notes'; use 'memory' or 'user'.",
        "entries": [],
        "usage": "",
    }
    assert not store.memory_path.parent.exists()
    assert backend.text(store.memory_path) is None


def test_newlines_and_carriage_returns_round_trip(backend: Backend, store: MemoryStore) -> None:
    content = "line one\r\nline two\rline three\nline four"
    assert store.add("memory", content)["entries"] == [content]
    fresh = backend.make()
    assert fresh.memory_entries == [content]


# -- replace and remove ---------------------------------------------------


def test_replace_changes_one_entry(backend: Backend, store: MemoryStore) -> None:
    for text in ("Likes tea", "Works at ACME", "Lives in Oslo"):
        store.add("user", text)
    result = store.replace("user", "ACME", "Works at Initech since 2023")
    assert result["success"] is True
    assert result["entries"] == ["Likes tea", "Works at Initech since 2023", "Lives in Oslo"]
    assert backend.text(store.user_path) == (
        "Likes tea\n§\nWorks at Initech since 2023\n§\nLives in Oslo"
    )


def test_replace_with_same_content_changes_nothing(store: MemoryStore) -> None:
    store.add("user", "Likes tea")
    result = store.replace("user", "tea", "Likes tea")
    assert result["success"] is True
    assert result["entries"] == ["Likes tea"]


def test_replace_into_an_existing_entry_is_refused(store: MemoryStore) -> None:
    store.add("user", "Likes tea")
    store.add("user", "Likes coffee")
    result = store.replace("user", "coffee", "Likes tea")
    assert result["success"] is False
    assert result["entries"] == ["Likes tea", "Likes coffee"]


def test_remove_deletes_one_entry(backend: Backend, store: MemoryStore) -> None:
    for text in ("Likes tea", "Works at ACME", "Lives in Oslo"):
        store.add("user", text)
    result = store.remove("user", "Works at")
    assert result["success"] is True
    assert result["message"] == "Entry removed."
    assert result["entries"] == ["Likes tea", "Lives in Oslo"]
    assert backend.text(store.user_path) == "Likes tea\n§\nLives in Oslo"
    store.remove("user", "tea")
    store.remove("user", "Oslo")
    assert backend.text(store.user_path) == ""
    assert backend.make().user_entries == []


@pytest.mark.parametrize("action", ["replace", "remove"])
def test_old_text_matching_nothing(backend: Backend, store: MemoryStore, action: str) -> None:
    store.add("memory", "Fact one")
    if action == "replace":
        result = store.replace("memory", "Fact two", "Fact three")
    else:
        result = store.remove("memory", "Fact two")
    assert result["success"] is False
    assert "No entry contains 'Fact two'" in result["message"]
    assert result["entries"] == ["Fact one"]
    assert backend.text(store.memory_path) == "Fact one"


@pytest.mark.parametrize("action", ["replace", "remove"])
@pytest.mark.parametrize("old_text", ["", "   "])
def test_empty_old_text(backend: Backend, store: MemoryStore, action: str, old_text: str) -> None:
    store.add("memory", "Fact one")
    if action == "replace":
        result = store.replace("memory", old_text, "Fact three")
    else:
        result = store.remove("memory", old_text)
    assert result["success"] is False
    assert "old_text is empty" in result["message"]
    assert backend.text(store.memory_path) == "Fact one"


@pytest.mark.parametrize("action", ["replace", "remove"])
def test_old_text_matching_several_entries(
    backend: Backend, store: MemoryStore, action: str
) -> None:
    long_entry = "User likes coffee " + "x" * 200
    for text in ("User likes tea", long_entry, "Lives in Oslo"):
        store.add("user", text)
    before = backend.text(store.user_path)
    if action == "replace":
        result = store.replace("user", "likes", "User likes water")
    else:
        result = store.remove("user", "likes")
    assert result["success"] is False
    message = result["message"]
    assert "2 entries contain 'likes'" in message
    assert "'User likes tea'" in message
    assert repr(long_entry[:80] + "...") in message
    assert long_entry not in message
    assert "Oslo" not in message
    assert backend.text(store.user_path) == before


def test_exact_entry_wins_over_substring_matches(store: MemoryStore) -> None:
    store.add("user", "tea")
    store.add("user", "green tea")
    result = store.remove("user", "tea")
    assert result["entries"] == ["green tea"]


def test_identical_copies_in_a_hand_edited_file(backend: Backend, store: MemoryStore) -> None:
    backend.put(store.user_path, ["tea", "tea", "cake"])
    result = store.remove("user", "te")
    assert result["success"] is True
    assert result["entries"] == ["tea", "cake"]


# -- limits ---------------------------------------------------------------


def test_limit_counts_delimiters_and_allows_exact_fit(backend: Backend) -> None:
    store = backend.make(memory_limit=23)
    assert store.add("memory", "a" * 10)["success"]
    result = store.add("memory", "b" * 10)  # 10 + 3 + 10 = 23
    assert result["success"] is True
    assert result["usage"] == "100% — 23/23 chars"


def test_add_over_limit_is_refused_without_truncating(backend: Backend) -> None:
    store = backend.make(memory_limit=100)
    store.add("memory", "a" * 60)
    before = backend.text(store.memory_path)
    result = store.add("memory", "b" * 40)  # 60 + 3 + 40 = 103
    assert result["success"] is False
    message = result["message"]
    assert "60% — 60/100 chars" in message
    assert "40 chars" in message
    assert "103/100" in message
    assert "Consolidate" in message
    assert "replace or remove" in message
    assert result["entries"] == ["a" * 60]
    assert result["usage"] == "60% — 60/100 chars"
    assert backend.text(store.memory_path) == before


def test_replace_over_limit_is_refused(backend: Backend) -> None:
    store = backend.make(memory_limit=50)
    store.add("memory", "short")
    store.add("memory", "x" * 30)
    before = backend.text(store.memory_path)
    result = store.replace("memory", "short", "y" * 20)  # 20 + 3 + 30 = 53
    assert result["success"] is False
    assert "Consolidate" in result["message"]
    assert backend.text(store.memory_path) == before
    assert store.replace("memory", "short", "y" * 17)["success"]  # exactly 50


@pytest.mark.parametrize("char", ["é", "中", "😀"])
def test_limit_counts_characters_not_bytes(backend: Backend, char: str) -> None:
    store = backend.make()
    result = store.add("user", char * 1375)
    assert result["success"] is True
    assert result["usage"] == "100% — 1,375/1,375 chars"
    assert len((backend.text(store.user_path) or "").encode("utf-8")) > 1375
    store.remove("user", char)
    refused = store.add("user", char * 1376)
    assert refused["success"] is False
    assert "1,376 chars" in refused["message"]
    assert refused["entries"] == []


# -- the frozen snapshot --------------------------------------------------


def test_header_format(backend: Backend) -> None:
    store = backend.make()
    entries = ["a" * 735, "b" * 736]  # 735 + 3 + 736 = 1,474 chars
    for entry in entries:
        result = store.add("memory", entry)
    assert result["usage"] == "67% — 1,474/2,200 chars"
    store.add("user", "Name: Ada")
    store.load_from_disk()
    assert store.format_for_system_prompt("memory") == (
        f"{SEP}\nMEMORY (your personal notes) [67% — 1,474/2,200 chars]\n{SEP}\n"
        f"{'a' * 735}\n§\n{'b' * 736}"
    )
    assert store.format_for_system_prompt("user") == (
        f"{SEP}\nUSER PROFILE (who the user is) [0% — 9/1,375 chars]\n{SEP}\nName: Ada"
    )


def test_header_percentage_is_capped(backend: Backend) -> None:
    store = backend.make(memory_limit=10)
    backend.put(store.memory_path, ["x" * 25])
    store.load_from_disk()
    block = store.format_for_system_prompt("memory")
    assert block is not None
    assert "[100% — 25/10 chars]" in block


def test_snapshot_stays_frozen_while_live_entries_change(backend: Backend) -> None:
    seed = backend.make()
    seed.add("memory", "Fact one")
    seed.add("memory", "Fact two")
    seed.add("user", "Likes tea")

    store = backend.make()
    memory_block = store.format_for_system_prompt("memory")
    user_block = store.format_for_system_prompt("user")
    assert memory_block is not None and "Fact two" in memory_block
    assert user_block is not None

    store.add("memory", "Fact three")
    store.replace("memory", "one", "Fact one, revised")
    store.remove("memory", "two")
    store.add("user", "Works at ACME")
    store.remove("user", "tea")

    assert store.memory_entries == ["Fact one, revised", "Fact three"]
    assert store.user_entries == ["Works at ACME"]
    assert store.format_for_system_prompt("memory") == memory_block
    assert store.format_for_system_prompt("user") == user_block

    fresh = backend.make()
    fresh_block = fresh.format_for_system_prompt("memory")
    assert fresh_block is not None
    assert fresh_block.endswith("Fact one, revised\n§\nFact three")
    assert fresh.format_for_system_prompt("user") == (
        f"{SEP}\nUSER PROFILE (who the user is) [0% — 13/1,375 chars]\n{SEP}\nWorks at ACME"
    )

    store.load_from_disk()  # only a new load retakes the snapshot
    assert store.format_for_system_prompt("memory") == fresh_block


def test_snapshot_of_empty_file_stays_none(store: MemoryStore) -> None:
    store.add("memory", "Fact one")
    assert store.format_for_system_prompt("memory") is None
    store.load_from_disk()
    assert store.format_for_system_prompt("memory") is not None


# -- sharing and recovery -------------------------------------------------


def test_writes_reread_the_file_so_other_writers_are_kept(backend: Backend) -> None:
    first = backend.make()
    second = backend.make()
    first.add("memory", "From the first store")
    result = second.add("memory", "From the second store")
    assert result["entries"] == ["From the first store", "From the second store"]
    refused = first.remove("memory", "nothing like this")
    assert refused["entries"] == ["From the first store", "From the second store"]
    assert first.memory_entries == refused["entries"]


def test_stale_temp_files_of_this_file_are_removed(disk_store: MemoryStore) -> None:
    store = disk_store
    directory = store.memory_path.parent
    directory.mkdir(parents=True)
    stale = directory / ".mem_MEMORY.md.abc123.tmp"
    stale.write_text("half written", encoding="utf-8")
    other = directory / ".mem_OTHER.md.def456.tmp"
    other.write_text("another file's writer", encoding="utf-8")
    assert store.add("memory", "Fact one")["success"]
    assert not stale.exists()
    assert other.exists()
    assert sorted(p.name for p in directory.iterdir()) == [
        ".mem_OTHER.md.def456.tmp",
        "MEMORY.md",
        "MEMORY.md.lock",
    ]


def test_logs_hide_content_below_debug(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="memory.store"):
        store.add("user", "secret-ish detail")
    assert any("add" in r.getMessage() and "user" in r.getMessage() for r in caplog.records)
    assert "secret-ish" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="memory.store"):
        store.replace("user", "secret-ish", "another detail")
    assert "another detail" not in caplog.text  # not even at DEBUG, unless asked for
    assert "chars>" in caplog.text
    caplog.clear()
    log_content.enable(True)
    try:
        with caplog.at_level(logging.DEBUG, logger="memory.store"):
            store.replace("user", "another detail", "a third detail")
    finally:
        log_content.enable(False)
    assert "a third detail" in caplog.text


def test_the_default_backend_is_the_plain_files(disk_store: MemoryStore) -> None:
    assert isinstance(disk_store.files, DiskMemoryFiles)
    disk_store.add("memory", "Fact one")
    assert disk_store.memory_path.read_text(encoding="utf-8") == "Fact one"

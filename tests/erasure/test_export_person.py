"""Exporting a person: one zip with every store chorus keeps of them, and no one else's."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from memory.database import Location
from memory.erasure import export_person
from memory.paths import ChorusPaths
from memory.providers import MemoryProvider
from memory.store import DiskMemoryFiles, PostgresMemoryFiles
from tests.erasure.test_erase_person import ALICE, SECRET, _fill

pytest_plugins = ["tests.fakes.postgres_fixtures"]


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_archive_holds_every_store(tmp_path: Path, engine: str, request: Any) -> None:
    from tests.plugins.holographic_cases import open_provider

    home = tmp_path / "home"
    paths = ChorusPaths(home)
    where: Location
    if engine == "sqlite":
        where, files, store = paths.state_db, None, DiskMemoryFiles()
    else:
        where = request.getfixturevalue("postgres_url")
        files = store = PostgresMemoryFiles(str(where), paths.memories_dir)
    _fill(where, home, store)

    def provider_for(key: str) -> MemoryProvider:
        return open_provider(home, key)

    archive = export_person(
        ALICE, where=where, paths=paths, files=files, provider_for=provider_for, now=lambda: 7.0
    )
    if files is not None:
        files.close()
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("manifest.json"))
        assert manifest["accounts"] == [ALICE]
        assert manifest["providers"] == {f"holographic ({ALICE})": {"exported": True}}
        assert set(manifest["files"]) | {"manifest.json"} == names
        profile = z.read("profile/telegram-1/USER.md").decode()
        assert SECRET in profile
        transcript = json.loads(z.read("transcripts/s-telegram:1.json"))
        assert transcript["messages"][0]["content"] == f"my PIN hint is {SECRET}"
        assert SECRET in json.loads(z.read("staged_writes.json"))[0]["content"]
        assert json.loads(z.read("usage.json"))[0]["person"] == ALICE
        facts = json.loads(z.read("providers/holographic-telegram-1.json"))["memories"]
        assert [f["text"] for f in facts] == [f"The PIN hint is {SECRET}."]
        everything = b"".join(z.read(n) for n in names)
    assert b"bees" not in everything  # nothing of Bob's


def test_a_provider_that_cannot_export_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    paths = ChorusPaths(home)

    class Mute(MemoryProvider):
        name = "mute"  # type: ignore[assignment]

        def is_available(self) -> bool:
            return True

        def initialize(self, session_id: str, **kwargs: Any) -> None:
            return None

        def get_tool_schemas(self) -> list[dict[str, Any]]:
            return []

    archive = export_person(
        ALICE, where=paths.state_db, paths=paths, provider_for=lambda _k: Mute()
    )
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["providers"][f"mute ({ALICE})"]["exported"] is False
    assert "no way to export" in manifest["providers"][f"mute ({ALICE})"]["why"]

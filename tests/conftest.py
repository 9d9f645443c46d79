"""Fixtures shared by every test: an isolated CHORUS_HOME and a clean environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI

_ISOLATED_PREFIXES = ("CHORUS_", "OPENAI_", "TELEGRAM_", "DISCORD_", "SLACK_")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's real tokens or configuration."""
    for name in list(os.environ):
        if name.startswith(_ISOLATED_PREFIXES):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def chorus_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh CHORUS_HOME that does not exist yet, exported in the environment."""
    home = tmp_path / "chorus-home"
    monkeypatch.setenv("CHORUS_HOME", str(home))
    yield home


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible endpoint; script it with ``reply``/``tool_call``/``responder``."""
    with FakeOpenAI() as fake:
        yield fake

"""Fixtures shared by every test: an isolated CHORUS_HOME and a clean environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI

ISOLATED_PREFIXES = (
    # chorus itself, the LLM endpoint and the platforms
    "CHORUS_",
    "OPENAI_",
    "TELEGRAM_",
    "DISCORD_",
    "SLACK_",
    # the memory providers (their keys, URLs, and what their SDKs read on their own)
    "HONCHO_",
    "MEM0_",
    "SUPERMEMORY_",
    "RETAINDB_",
    "HINDSIGHT_",
    "OPENVIKING_",
    "BRV_",
    "BYTEROVER_",
    # libpq's defaults, which would fill in what a database URL leaves out
    "PG",
)
"""Variables with these prefixes are removed from every test's environment."""

ISOLATED_NAMES = frozenset({"DATABASE_URL"})
"""Variables removed by exact name."""


def isolated(name: str) -> bool:
    """Whether ``_clean_environment`` removes the variable ``name``."""
    return name in ISOLATED_NAMES or name.startswith(ISOLATED_PREFIXES)


HEAVY_TIMEOUTS = {"slow": 600, "real_server": 900, "container": 2400}
"""Seconds a test with one of these marks may take, setup and teardown included (the
others: ``timeout`` in pyproject.toml, 300 s): real clusters, real servers (a module's
first test also starts its server), container builds (the first builds the base image)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        heavy = [limit for mark, limit in HEAVY_TIMEOUTS.items() if item.get_closest_marker(mark)]
        if heavy and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(max(heavy)))


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's real tokens, databases or configuration."""
    for name in list(os.environ):
        if isolated(name):
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

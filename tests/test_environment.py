"""The developer's environment does not reach the tests: tokens, provider keys, DATABASE_URL."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from plugins.memory import config_fields, discover_memory_providers, load_memory_provider
from plugins.memory.byterover._config import BINARY_ENV
from tests.conftest import isolated

ROOT = Path(__file__).resolve().parent.parent

DEVELOPER_ENV = {
    "DATABASE_URL": "postgresql://dev:secret@db.example.invalid/chorus",
    "OPENAI_API_KEY": "sk-developer",
    "TELEGRAM_BOT_TOKEN": "123:developer",
    "CHORUS_HOME": "/nonexistent/developer-home",
    "HONCHO_API_KEY": "honcho-developer",
    "HONCHO_URL": "https://honcho.example.invalid",
    "MEM0_API_KEY": "m0-developer",
    "MEM0_DIR": "/nonexistent/mem0",
    "SUPERMEMORY_API_KEY": "sm-developer",
    "RETAINDB_API_KEY": "rdb-developer",
    "RETAINDB_BASE_URL": "https://retaindb.example.invalid",
    "HINDSIGHT_API_KEY": "hs-developer",
    "HINDSIGHT_BASE_URL": "https://hindsight.example.invalid",
    "OPENVIKING_API_KEY": "ov-developer",
    "OPENVIKING_BASE_URL": "https://openviking.example.invalid",
    "BRV_BINARY": "/nonexistent/brv",
    "PGPASSWORD": "developer",
}

PROBE = """
import os

SET = {names!r}


def test_sees_none_of_the_developer_environment() -> None:
    assert [name for name in SET if name in os.environ] == []
    assert os.environ["KEPT_BY_THE_TESTS"] == "yes"
"""


def test_a_test_sees_none_of_the_developer_environment(tmp_path: Path) -> None:
    """A real pytest run, started with the variables set, sees none of them in its tests."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(textwrap.dedent(PROBE.format(names=sorted(DEVELOPER_ENV))), encoding="utf-8")
    env = {**os.environ, **DEVELOPER_ENV, "KEPT_BY_THE_TESTS": "yes"}
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    result = subprocess.run(
        [*pytest, "-p", "tests.conftest", "--rootdir", str(tmp_path), "-c", os.devnull, str(probe)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_every_variable_a_provider_reads_is_removed(tmp_path: Path) -> None:
    """Each bundled provider's settings that fall back to an environment variable are covered."""
    names = {BINARY_ENV}
    for info in discover_memory_providers(tmp_path, check_available=False):
        provider = load_memory_provider(info.name, tmp_path)
        names |= {f["env_var"] for f in config_fields(provider) if f.get("env_var")}
    assert {"HONCHO_API_KEY", "MEM0_API_KEY", "SUPERMEMORY_API_KEY"} <= names
    assert [name for name in sorted(names) if not isolated(name)] == []


def test_unrelated_variables_are_kept() -> None:
    assert not isolated("PATH")
    assert not isolated("HOME")
    # scripts/test shares compiled bytecode with every process the tests start
    assert not isolated("PYTHONPYCACHEPREFIX")
    assert "PATH" in os.environ

"""``chorus memory show``, ``backup`` and ``restore`` with ``database.url`` set: real processes.

The memory files are then rows in PostgreSQL (a real, throwaway database);
the commands must read and write them there, not on the disk.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from memory.paths import ChorusPaths, UserKey
from memory.store import MemoryStore, PostgresMemoryFiles

pytest_plugins = ["tests.fakes.postgres_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
ALICE = UserKey("telegram", "42")


def run(
    home: Path, *args: str, url: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHORUS_", "OPENAI_")) and k != "DATABASE_URL"
    }
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200"})
    if url is not None:
        env["CHORUS_DATABASE__URL"] = url
    return subprocess.run(
        [str(CHORUS), *args], capture_output=True, text=True, env=env, timeout=60, cwd=cwd
    )


def pg_store(url: str, home: Path) -> tuple[PostgresMemoryFiles, MemoryStore]:
    paths = ChorusPaths(home)
    files = PostgresMemoryFiles(url, paths.memories_dir)
    store = MemoryStore(paths.memory_file, paths.user_file(ALICE), files=files)
    store.load_from_disk()
    return files, store


def test_memory_show_reads_postgres(postgres_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    files, store = pg_store(postgres_url, home)
    with files:
        assert store.add("memory", "The office wifi is called Nimbus")["success"]
        assert store.add("user", "Alice prefers short answers")["success"]

    shared = run(home, "memory", "show", url=postgres_url)
    assert shared.returncode == 0, shared.stdout + shared.stderr
    assert "The office wifi is called Nimbus" in shared.stdout
    assert "Alice" not in shared.stdout
    profile = run(home, "memory", "show", "--user", "telegram:42", url=postgres_url)
    assert "Alice prefers short answers" in profile.stdout
    other = run(home, "memory", "show", "--user", "telegram:43", url=postgres_url)
    assert "Alice" not in other.stdout and "empty" in other.stdout

    on_disk = run(home, "memory", "show")  # without database.url: the (empty) files
    assert on_disk.returncode == 0
    assert "empty" in on_disk.stdout and "Nimbus" not in on_disk.stdout


@pytest.mark.parametrize("direction", ["postgres-to-files", "files-to-postgres"])
def test_backup_and_restore_keep_the_entries(
    postgres_url: str, tmp_path: Path, direction: str
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    source_url = postgres_url if direction == "postgres-to-files" else None
    target_url = postgres_url if direction == "files-to-postgres" else None
    if source_url is not None:
        files, store = pg_store(source_url, source)
        with files:
            store.add("memory", "Deploys go through CI")
            store.add("user", "Alice prefers short answers")
    else:
        paths = ChorusPaths(source)
        plain = MemoryStore(paths.memory_file, paths.user_file(ALICE))
        plain.add("memory", "Deploys go through CI")
        plain.add("user", "Alice prefers short answers")

    archive = tmp_path / "backup.tar.gz"
    backed = run(source, "backup", str(archive), url=source_url)
    assert backed.returncode == 0, backed.stdout + backed.stderr
    assert ("PostgreSQL tables" in backed.stdout) == (source_url is not None)

    restored = run(target, "restore", str(archive), url=target_url)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert ("into PostgreSQL" in restored.stdout) == (target_url is not None)
    # the tables of a PostgreSQL backup need a database to go into: said, not dropped silently
    assert ("not restored: the backup's" in restored.stdout) == (source_url is not None)
    assert ChorusPaths(target).memory_file.exists() == (target_url is None)

    shared = run(target, "memory", "show", url=target_url)
    assert "Deploys go through CI" in shared.stdout, shared.stdout + shared.stderr
    profile = run(target, "memory", "show", "--user", "telegram:42", url=target_url)
    assert "Alice prefers short answers" in profile.stdout


@pytest.mark.parametrize("wrong", ["role", "database", "port", "privileges"])
def test_doctor_says_in_one_line_why_postgres_refused(
    postgres_url: str, tmp_path: Path, wrong: str
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    scheme, rest = postgres_url.split("://", 1)
    user_at_host, database = rest.rsplit("/", 1)
    host = user_at_host.split("@", 1)[1]
    url = {
        "role": f"{scheme}://intruder:pw-secret-42@{host}/{database}",
        "database": f"{scheme}://{user_at_host}/no_such_db_here",
        "port": f"{scheme}://chorus:pw-secret-42@127.0.0.1:9/{database}",
        "privileges": f"{scheme}://visitor:pw-secret-42@{host}/{database}",
    }[wrong]
    if wrong == "privileges":  # a role that may connect but not create the tables
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("DROP ROLE IF EXISTS visitor")
            admin.execute("CREATE ROLE visitor LOGIN")
            admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    result = run(home, "doctor", url=url)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "pw-secret-42" not in result.stdout + result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("[FAIL]")]
    assert line.startswith("[FAIL] database: ")
    assert "PostgreSQL" in line
    lines = result.stdout.splitlines()
    assert all(line.startswith("[") for line in lines), result.stdout  # one line a check
    assert len(lines) >= 6  # every other check still ran

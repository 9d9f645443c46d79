"""Pytest fixtures around ``PostgresServer``: one cluster per test run, one database per test.

Load them with ``pytest_plugins = ["tests.fakes.postgres_fixtures"]``. Tests
that need PostgreSQL fail, never skip, when it is missing: CI installs it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .postgres_server import PostgresServer

__all__ = ["own_postgres", "postgres_server", "postgres_url"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the whole run, stopped and removed at the end.

    Its directory is not under pytest's temp root: every pytest session on the
    machine makes that root 0700 again, which would lock out the unprivileged
    server (run as ``nobody`` when the tests run as root) mid-run.
    """
    yield from _cluster()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster of one test's own, which it may stop and start again."""
    yield from _cluster()


def _cluster() -> Iterator[PostgresServer]:
    root = Path(tempfile.mkdtemp(prefix="chorus-postgres-"))
    try:
        with PostgresServer(root / "cluster") as server:
            yield server
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database of its own for one test."""
    return postgres_server.create_database()

"""Pytest fixtures around ``PostgresServer``: one cluster per test run, one database per test.

Load them with ``pytest_plugins = ["tests.fakes.postgres_fixtures"]``. Tests
that need PostgreSQL fail, never skip, when it is missing: CI installs it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .postgres_server import PostgresServer

__all__ = ["postgres_server", "postgres_url"]


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the whole run, stopped at the end."""
    with PostgresServer(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database of its own for one test."""
    return postgres_server.create_database()

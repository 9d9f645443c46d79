"""A ``where`` fixture that runs a ``Tables`` component's test on SQLite, then on PostgreSQL.

Load it (and the PostgreSQL cluster it needs) with
``pytest_plugins = ["tests.fakes.tables_backends"]``:

    def test_something(where: Location) -> None:
        with Inbox(where) as inbox: ...

``where`` is ``tmp_path / "state.db"`` for ``sqlite`` and the URL of a fresh,
empty database for ``postgres``. Two components given the same ``where`` share
their tables, like two replicas of the gateway.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.database import Location

__all__ = ["where"]

pytest_plugins = ["tests.fakes.postgres_fixtures"]

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(params=BACKENDS)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """Where a component keeps its tables: a SQLite file, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return tmp_path / "state.db"
    url: str = request.getfixturevalue("postgres_url")
    return url

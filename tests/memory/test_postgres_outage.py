"""The PostgreSQL pool after the server was restarted or down for a while: the next
operation works, whatever the pool went through meanwhile (a real server, stopped and
started for real)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.database import PostgresPool, close_pool, open_pool
from memory.errors import DatabaseUnavailable
from tests.fakes.postgres_server import PostgresServer

pytest_plugins = ["tests.fakes.postgres_fixtures"]


@pytest.fixture
def pool(own_postgres: PostgresServer) -> Iterator[PostgresPool]:
    shared = open_pool(own_postgres.create_database())
    try:
        yield shared
    finally:
        close_pool(shared)


def answer(pool: PostgresPool) -> int:
    with pool.transaction() as conn:
        row = conn.execute("SELECT 41 + 1").fetchone()
    assert row is not None
    return int(row[0])


def test_the_first_operation_after_a_server_restart_works(
    own_postgres: PostgresServer, pool: PostgresPool
) -> None:
    assert answer(pool) == 42  # the pool holds a connection now
    own_postgres.stop()
    own_postgres.start()
    assert answer(pool) == 42  # not the dead connection of the old server


def test_a_server_back_after_a_long_outage_serves_the_next_operation(
    own_postgres: PostgresServer, pool: PostgresPool
) -> None:
    """The pool's own retries back off (1, 2, 4, 8, 16 s … apart); a request made just
    after the server came back must not wait for the next of them."""
    assert answer(pool) == 42
    own_postgres.stop()
    down = time.monotonic()
    for _ in range(2):  # the first meets the dead connection, the second waits and fails
        with pytest.raises(DatabaseUnavailable):
            answer(pool)
    time.sleep(max(0.0, 17.0 - (time.monotonic() - down)))  # the pool's retries are 16 s apart now
    own_postgres.start()
    assert answer(pool) == 42


def test_a_connection_taken_again_at_once_costs_no_extra_round_trip(
    own_postgres: PostgresServer, pool: PostgresPool, tmp_path: Path
) -> None:
    """The pool's check of a healthy idle connection asks the server nothing (before:
    an empty query before every transaction); the traced protocol of one connection
    over three transactions shows none, and each still answers."""
    trace = tmp_path / "protocol.trace"
    with trace.open("w") as out:
        with pool.transaction() as conn:
            conn.raw.pgconn.trace(out.fileno())
            traced = conn.raw
        for _ in range(3):
            with pool.transaction() as conn:
                assert conn.raw is traced  # the one pooled connection, checked each time
                assert conn.execute("SELECT 41 + 1").fetchone() == (42,)
        traced.pgconn.untrace()
    protocol = trace.read_text()
    assert protocol.count("SELECT 41 + 1") == 3
    assert "EmptyQueryResponse" not in protocol

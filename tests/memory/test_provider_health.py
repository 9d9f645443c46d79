"""Provider health: one row per provider and kind, overwritten, on SQLite and PostgreSQL."""

from __future__ import annotations

import os

from memory.database import Location
from memory.providers import ProviderHealth

pytest_plugins = ["tests.fakes.tables_backends"]


def test_the_latest_event_of_each_kind_is_kept(where: Location) -> None:
    with ProviderHealth(where) as health:
        assert health.events("keyed") == {}
        health.started("keyed", "background")
        health.failed("keyed", "sync_turn", "TimeoutError")
        health.failed("keyed", "prefetch", "ConnectionError")  # overwrites the failure
        health.started("keyed", "primary")
        health.started("other", "background")
    with ProviderHealth(where) as reopened:
        events = reopened.events("keyed")
        assert set(events) == {"started", "failed"}
        started, failed = events["started"], events["failed"]
        assert (started.provider, started.method, started.detail) == (
            "keyed",
            "initialize",
            "primary",
        )
        assert (failed.method, failed.detail) == ("prefetch", "ConnectionError")
        assert started.pid == failed.pid == os.getpid()
        assert isinstance(failed.at, float) and failed.at >= started.at - 1.0
        assert list(reopened.events("other")) == ["started"]
        with reopened._locked() as conn:
            (rows,) = conn.execute("SELECT COUNT(*) FROM provider_health").fetchone()
        assert rows == 3


def test_two_replicas_see_each_others_events(postgres_url: str) -> None:
    with ProviderHealth(postgres_url) as gateway, ProviderHealth(postgres_url) as worker:
        gateway.started("keyed", "primary")
        worker.failed("keyed", "sync_turn", "TimeoutError")
        assert set(gateway.events("keyed")) == {"started", "failed"}
        assert worker.events("keyed")["started"].detail == "primary"
        gateway.failed("keyed", "prefetch", "OSError")
        assert worker.events("keyed")["failed"].method == "prefetch"

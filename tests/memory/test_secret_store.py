"""The secret store on SQLite and PostgreSQL: sealed values, names, waiting requests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory.database import Location
from memory.errors import SecretKeyMismatch, SecretKeyMissing, SecretStoreError
from memory.secrets import SecretKey, SecretStore, new_key_text

pytest_plugins = ["tests.fakes.tables_backends"]

KEY = SecretKey("k" * 40)
VALUE = "ghp_VerySecretValue1234567890"


def _raw_rows(where: Location) -> list[tuple[str, ...]]:
    """Every row of ``person_secrets`` as the database holds it."""
    if isinstance(where, Path):
        with sqlite3.connect(where) as conn:
            return [tuple(map(str, row)) for row in conn.execute("SELECT * FROM person_secrets")]
    import psycopg

    with psycopg.connect(str(where)) as conn:
        return [tuple(map(str, row)) for row in conn.execute("SELECT * FROM person_secrets")]


def test_a_value_is_stored_sealed_and_read_back(where: Location) -> None:
    with SecretStore(where, KEY) as store:
        store.set("telegram:1", "GITHUB_TOKEN", VALUE, now=10.0)
        store.set("telegram:1", "API_KEY", "other-value-123", now=11.0)
        store.set("telegram:2", "GITHUB_TOKEN", "bob-token-456", now=12.0)
        assert store.get("telegram:1", "GITHUB_TOKEN") == VALUE
        assert store.get("telegram:2", "GITHUB_TOKEN") == "bob-token-456"
        assert store.get("telegram:2", "API_KEY") is None
        assert store.names("telegram:1") == ["API_KEY", "GITHUB_TOKEN"]
    rows = _raw_rows(where)
    assert len(rows) == 3
    assert all(VALUE not in cell and "ghp_" not in cell for row in rows for cell in row)


def test_replace_delete_and_names_only(where: Location) -> None:
    with SecretStore(where, KEY) as store:
        store.set("slack:U1", "TOKEN", "first-value", now=1.0)
        store.set("slack:U1", "TOKEN", "second-value", now=2.0)
        assert store.get("slack:U1", "TOKEN") == "second-value"
        assert store.delete("slack:U1", "TOKEN") is True
        assert store.delete("slack:U1", "TOKEN") is False
        assert store.get("slack:U1", "TOKEN") is None
        assert store.names("slack:U1") == []


def test_without_a_key_nothing_is_stored(where: Location) -> None:
    with SecretStore(where, None) as store:
        assert not store.has_key
        with pytest.raises(SecretKeyMissing, match="CHORUS_SECRET_KEY is not set"):
            store.set("telegram:1", "TOKEN", VALUE, now=1.0)
        with pytest.raises(SecretKeyMissing):
            store.request("telegram:1", "1", "TOKEN", expires_at=100.0)
        assert store.names("telegram:1") == []


def test_a_wrong_key_is_a_clear_error(where: Location) -> None:
    with SecretStore(where, KEY) as store:
        store.set("telegram:1", "TOKEN", VALUE, now=1.0)
    with SecretStore(where, SecretKey(new_key_text())) as other:
        with pytest.raises(SecretKeyMismatch, match="another CHORUS_SECRET_KEY"):
            other.get("telegram:1", "TOKEN")
        assert other.names("telegram:1") == ["TOKEN"]


def test_a_value_moved_to_another_person_does_not_open(where: Location) -> None:
    with SecretStore(where, KEY) as store:
        store.set("telegram:1", "TOKEN", VALUE, now=1.0)
        store.set("telegram:2", "TOKEN", "bob-value-99", now=1.0)
        with store._locked(write=True) as conn:  # someone with write access to the database
            sealed = conn.execute(
                "SELECT sealed FROM person_secrets WHERE person = 'telegram:1'"
            ).fetchone()[0]
            conn.execute(
                "UPDATE person_secrets SET sealed = ? WHERE person = 'telegram:2'", (sealed,)
            )
        with pytest.raises(SecretKeyMismatch, match="altered"):
            store.get("telegram:2", "TOKEN")


@pytest.mark.parametrize("name", ["github_token", "1TOKEN", "TOKEN-X", "A" * 65, "", "TÖKEN"])
def test_names_are_checked(where: Location, name: str) -> None:
    with (
        SecretStore(where, KEY) as store,
        pytest.raises(SecretStoreError, match="not a secret name"),
    ):
        store.set("telegram:1", name, VALUE, now=1.0)


def test_a_short_key_is_refused() -> None:
    with pytest.raises(SecretKeyMissing, match="too short"):
        SecretKey("short")


def test_a_request_is_fulfilled_once_and_expires(where: Location) -> None:
    with SecretStore(where, KEY) as store, SecretStore(where, KEY) as replica:
        store.request("telegram:1", "1", "TOKEN", expires_at=100.0)
        assert store.pending_in("telegram:1", "999", now=50.0) is None  # another chat
        assert store.fulfil("telegram:1", "999", VALUE, now=50.0) is None
        waiting = store.pending_in("telegram:1", "1", now=50.0)
        assert waiting is not None and waiting.name == "TOKEN"
        assert replica.fulfil("telegram:1", "1", VALUE, now=50.0) == "TOKEN"
        assert store.fulfil("telegram:1", "1", "second-message", now=50.0) is None  # once
        assert store.get("telegram:1", "TOKEN") == VALUE
        store.request("telegram:1", "1", "OTHER", expires_at=100.0)
        assert store.pending_in("telegram:1", "1", now=101.0) is None  # expired
        assert store.fulfil("telegram:1", "1", VALUE, now=101.0) is None
        assert store.waiting("telegram:1", now=50.0) is None
        assert store.names("telegram:1") == ["TOKEN"]
        store.request("telegram:1", "1", "OTHER", expires_at=100.0)
        cancelled = store.cancel("telegram:1", now=60.0)
        assert cancelled is not None and cancelled.name == "OTHER"
        assert store.cancel("telegram:1", now=60.0) is None


def test_a_failed_store_leaves_the_request_waiting(where: Location) -> None:
    with SecretStore(where, KEY) as store:
        store.request("telegram:1", "1", "TOKEN", expires_at=100.0)
        with pytest.raises(SecretStoreError):
            store.fulfil("telegram:1", "1", "x" * 10_000, now=50.0)
        assert store.pending_in("telegram:1", "1", now=50.0) is not None

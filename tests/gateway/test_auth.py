"""Who may talk to the bot: deny by default, admins, pairing, run-time allow and deny."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.access import CODE_ALPHABET, Authorizer, GatewayDB
from gateway.config import AuthSettings
from gateway.events import InboundMessage
from memory.database import Location
from tests.fakes.clock import FakeClock

pytest_plugins = ["tests.fakes.tables_backends"]

ADMIN = "telegram:1"
CODE = re.compile(rf"\b[{CODE_ALPHABET}]{{8}}\b")


@pytest.fixture
def db(where: Location) -> Iterator[GatewayDB]:
    with GatewayDB(where) as gateway_db:
        yield gateway_db


def stored_bytes(db: GatewayDB) -> bytes:
    """Everything the gateway's tables hold: the SQLite files, or every PostgreSQL row."""
    if isinstance(db.location, Path):
        return b"".join(p.read_bytes() for p in db.path.parent.glob(db.path.name + "*"))
    tables = ("gateway_settings", "user_access", "pairing_codes", "pairing_requests", "audit_log")
    with db._locked() as conn:
        rows = [row for table in tables for row in conn.execute(f"SELECT * FROM {table}")]
    return b"".join(v if isinstance(v, bytes) else str(v).encode() for row in rows for v in row)


def stored_rows(db: GatewayDB) -> list[tuple[Any, ...]]:
    """Every row of the gateway's tables."""
    tables = ("gateway_settings", "user_access", "pairing_codes", "pairing_requests", "audit_log")
    with db._locked() as conn:
        return [tuple(row) for table in tables for row in conn.execute(f"SELECT * FROM {table}")]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def settings(**overrides: Any) -> AuthSettings:
    values: dict[str, Any] = {"admins": [ADMIN], "allowed_users": ["discord:77"]}
    values.update(overrides)
    return AuthSettings(**values)


def dm(user: str, text: str = "hello", platform: str = "telegram") -> InboundMessage:
    return InboundMessage(platform, f"dm-{user}", user, text, "m1", is_direct=True)


def group(user: str, text: str = "hello", platform: str = "telegram") -> InboundMessage:
    return InboundMessage(platform, "group-1", user, text, "m1", is_direct=False)


def code_of(reply: str | None) -> str:
    assert reply is not None
    found = CODE.search(reply)
    assert found is not None, reply
    return found.group(0)


# -- deny by default, admins, allowed users -----------------------------------


def test_unknown_users_are_refused_by_default(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(AuthSettings(), db, clock)
    decision = auth.decide(dm("42"))
    assert not decision.allowed
    assert decision.reply is not None and "private" in decision.reply
    assert "telegram:42" in decision.reply  # so the admin knows whom to add
    silent = auth.decide(group("43"))
    assert not silent.allowed and silent.reply is None


def test_admins_and_allowed_users_are_allowed(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(), db, clock)
    assert auth.decide(dm("1")).allowed
    assert auth.decide(group("1")).allowed
    assert auth.decide(dm("77", platform="discord")).allowed
    assert auth.decide(group("77", platform="discord")).allowed
    assert not auth.decide(dm("77", platform="telegram")).allowed


def test_admin_platform_is_case_insensitive_but_ids_are_exact(
    db: GatewayDB, clock: FakeClock
) -> None:
    auth = Authorizer(settings(admins=["Slack:U0ABC"]), db, clock)
    assert auth.is_admin("slack:U0ABC")
    assert auth.is_admin("SLACK:U0ABC")
    assert not auth.is_admin("slack:u0abc")
    assert auth.decide(dm("U0ABC", platform="slack")).allowed


def test_console_user_is_admin(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(AuthSettings(), db, clock)
    assert auth.is_admin("console:dana")
    assert auth.decide(dm("dana", platform="console")).allowed
    assert not auth.deny("console:dana", by=ADMIN).ok


def test_open_policy_allows_everyone(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="open"), db, clock)
    assert auth.decide(dm("42")).allowed
    assert auth.decide(group("43")).allowed


def test_identity_comes_from_the_user_id_not_the_text(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(), db, clock)
    claim = dm("666", text=f"I am {ADMIN}, the admin. /admin allow telegram:666")
    decision = auth.decide(claim)
    assert not decision.allowed and decision.reason != "admin"
    assert not auth.is_admin(claim.user_key)


def test_refusal_reply_is_not_repeated_within_an_hour(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(AuthSettings(), db, clock)
    assert auth.decide(dm("42")).reply is not None
    assert auth.decide(dm("42")).reply is None
    assert auth.decide(dm("43")).reply is not None  # another user gets their own notice
    clock.set(clock.time() + 3599)
    assert auth.decide(dm("42")).reply is None
    clock.set(clock.time() + 2)
    assert auth.decide(dm("42")).reply is not None


# -- pairing ---------------------------------------------------------------


def test_pairing_code_is_issued_in_dm_and_approved_once(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="pairing"), db, clock)
    decision = auth.decide(dm("42"))
    assert not decision.allowed and decision.reason == "pairing_code_issued"
    code = code_of(decision.reply)
    assert "admin" in (decision.reply or "")

    stored = stored_bytes(db)
    assert db.pending_code("telegram:42", clock.time()) is not None  # the code is in there
    assert code.encode() not in stored and code.lower().encode() not in stored

    reply = auth.approve_code(f"  {code.lower()} ", by=ADMIN)
    assert reply.ok and reply == "Approved telegram:42."
    assert reply.subject == "telegram:42" and reply.chat_id == "dm-42"
    assert auth.decide(dm("42")).allowed

    again = auth.approve_code(code, by=ADMIN)
    assert not again.ok and "already used" in again


def test_group_messages_from_unknown_users_get_no_code(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="pairing"), db, clock)
    decision = auth.decide(group("42"))
    assert not decision.allowed and decision.reply is None


def test_wrong_and_expired_codes_are_refused(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="pairing", pairing_code_ttl_minutes=10), db, clock)
    code = code_of(auth.decide(dm("42")).reply)

    wrong = auth.approve_code("ABCDEFGH" if code != "ABCDEFGH" else "HGFEDCBA", by=ADMIN)
    assert not wrong.ok and "No pairing code matches" in wrong
    malformed = auth.approve_code("hello", by=ADMIN)
    assert not malformed.ok and "not a pairing code" in malformed

    clock.set(clock.time() + 10 * 60 + 1)
    expired = auth.approve_code(code, by=ADMIN)
    assert not expired.ok and "expired" in expired
    assert not auth.decide(dm("42")).allowed


def test_new_code_invalidates_the_old_one(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="pairing"), db, clock)
    first = code_of(auth.decide(dm("42")).reply)
    pending = auth.decide(dm("42", text="did it work?"))
    assert pending.reason == "pairing_pending" and CODE.search(pending.reply or "") is None
    second = code_of(auth.decide(dm("42", text="/pair")).reply)
    assert second != first
    old = auth.approve_code(first, by=ADMIN)
    assert not old.ok and "replaced" in old
    assert auth.approve_code(second, by=ADMIN).ok


def test_code_rate_limit_is_per_user(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="pairing", pairing_codes_per_hour=3), db, clock)
    for _ in range(3):
        assert auth.decide(dm("42", text="/pair")).reason == "pairing_code_issued"
    limited = auth.decide(dm("42", text="/pair"))
    assert limited.reason == "pairing_limited"
    assert limited.reply is not None and "too many" in limited.reply
    assert auth.decide(dm("42", text="/pair")).reply is None  # told once, then silence

    other = auth.decide(dm("43"))
    assert other.reason == "pairing_code_issued"
    assert auth.approve_code(code_of(other.reply), by=ADMIN).ok

    clock.set(clock.time() + 3601)
    assert auth.decide(dm("42", text="/pair")).reason == "pairing_code_issued"


# -- run-time allow and deny -----------------------------------------------------


def test_allow_and_deny_persist_across_restarts(where: Location, clock: FakeClock) -> None:
    with GatewayDB(where) as first_db:
        auth = Authorizer(settings(), first_db, clock)
        assert auth.allow("telegram:42", by=ADMIN).ok
        assert auth.deny("discord:77", by=ADMIN).ok  # was allowed by the config
    with GatewayDB(where) as second_db:
        auth = Authorizer(settings(), second_db, clock)
        assert auth.decide(dm("42")).allowed
        refused = auth.decide(dm("77", platform="discord"))
        assert not refused.allowed and refused.reason == "denied"
        assert refused.reply is not None and "not allowed" in refused.reply
        assert auth.decide(group("77", platform="discord")).reply is None
        rows = {row.user_key: row for row in auth.users()}
        assert rows["telegram:42"].state == "allowed" and rows["telegram:42"].source == "runtime"
        assert rows["discord:77"].state == "denied" and rows["discord:77"].by == ADMIN
        assert rows[ADMIN].state == "admin" and rows[ADMIN].source == "config"


def test_deny_wins_over_open_policy(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(policy="open"), db, clock)
    auth.deny("telegram:42", by=ADMIN)
    assert not auth.decide(dm("42")).allowed
    auth.allow("telegram:42", by=ADMIN)
    assert auth.decide(dm("42")).allowed


def test_a_decision_read_without_writing_is_the_decision_but_for_a_pairing_stranger(
    db: GatewayDB, clock: FakeClock
) -> None:
    """``read_decision`` (what the gateway asks on its event loop when the tables are a
    local SQLite file) agrees with ``decide`` and writes nothing; only a stranger who may
    be given a pairing code is left to ``decide``."""
    auth = Authorizer(settings(policy="pairing"), db, clock)
    auth.allow("telegram:42", by=ADMIN)
    auth.deny("telegram:43", by=ADMIN)
    before = stored_rows(db)
    cases = [dm("1"), dm("42"), dm("43"), dm("77", platform="discord"), group("99")]
    read = [auth.read_decision(msg) for msg in cases]
    assert stored_rows(db) == before
    assert [(d.allowed, d.reason) for d in read if d is not None] == [
        (True, "admin"),
        (True, "allowed"),
        (False, "denied"),
        (True, "allowed"),
        (False, "not_allowed"),
    ]
    assert auth.read_decision(dm("99")) is None and stored_rows(db) == before
    given = auth.decide(dm("99"))
    assert given.reason == "pairing_code_issued" and code_of(given.reply)
    assert auth.reads_locally == isinstance(db.location, Path)


def test_deny_does_not_lock_out_a_config_admin(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(), db, clock)
    reply = auth.deny("TELEGRAM:1", by="telegram:2")
    assert not reply.ok and "admin" in reply
    assert auth.decide(dm("1")).allowed
    assert db.get_access(ADMIN) is None


def test_user_keys_from_admins_are_validated(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(), db, clock)
    for bad in ("42", "telegram:", ":42", "tele gram:42", "telegram:4 2", ""):
        reply = auth.allow(bad, by=ADMIN)
        assert not reply.ok and "platform:id" in reply, bad
        assert not auth.deny(bad, by=ADMIN).ok
    assert db.access_records() == []
    assert auth.allow(" Telegram:42 ", by=ADMIN) == "Allowed telegram:42."


def test_reload_changes_the_lists(db: GatewayDB, clock: FakeClock) -> None:
    auth = Authorizer(settings(), db, clock)
    assert not auth.decide(dm("5")).allowed
    auth.reload(settings(admins=["telegram:5"], allowed_users=[]))
    assert auth.decide(dm("5")).allowed and auth.is_admin("telegram:5")
    assert not auth.is_admin(ADMIN)
    assert not auth.decide(dm("77", platform="discord")).allowed


# -- audit log ---------------------------------------------------------------


def test_audit_entries_round_trip(where: Location) -> None:
    with GatewayDB(where) as db:
        first = db.audit(ADMIN, "approve", "telegram:42", "ok", at=100.0)
        second = db.audit("telegram:2", "deny", "telegram:1", "refused", at=200.0)
        assert 0 < first < second
    with GatewayDB(where) as db:
        entries = db.audit_entries()
        assert [(e.actor, e.command, e.args, e.outcome, e.at) for e in entries] == [
            ("telegram:2", "deny", "telegram:1", "refused", 200.0),
            (ADMIN, "approve", "telegram:42", "ok", 100.0),
        ]
        assert len(db.audit_entries(limit=1)) == 1
        assert [e.id for e in entries] == [second, first]
        assert db.audit_entries(limit=0) == []
        long = db.audit(ADMIN, "note", "x" * 1000, "ok", at=300.0)
        assert db.audit_entries(limit=1)[0].id == long
        assert db.audit_entries(limit=1)[0].args == "x" * 500


# -- the same tables seen by two replicas (PostgreSQL) ---------------------------------


def test_two_replicas_share_pairing_access_and_audit(postgres_url: str, clock: FakeClock) -> None:
    with GatewayDB(postgres_url) as db_a, GatewayDB(postgres_url) as db_b:
        assert db_a.install_salt() == db_b.install_salt()
        auth_a = Authorizer(settings(policy="pairing"), db_a, clock)
        auth_b = Authorizer(settings(policy="pairing"), db_b, clock)
        code = code_of(auth_a.decide(dm("42")).reply)
        assert auth_b.decide(dm("42", text="did it work?")).reason == "pairing_pending"
        assert auth_b.approve_code(code, by=ADMIN).ok  # issued on A, approved on B
        assert auth_a.decide(dm("42")).allowed
        again = auth_a.approve_code(code, by=ADMIN)
        assert not again.ok and "already used" in again

        auth_a.deny("telegram:42", by=ADMIN)
        assert not auth_b.decide(dm("42")).allowed
        assert db_b.get_access("telegram:42") == db_a.get_access("telegram:42")

        db_a.audit(ADMIN, "deny", "telegram:42", "ok", at=100.0)
        db_b.audit(ADMIN, "allow", "telegram:43", "ok", at=200.0)
        assert [e.command for e in db_a.audit_entries()] == ["allow", "deny"]
        assert db_a.audit_entries() == db_b.audit_entries()


def redeem_at_once(code: str, dbs: tuple[GatewayDB, ...], clock: FakeClock) -> list[bool]:
    """Whether each of ``dbs`` approved ``code``, all trying at the same moment."""
    replies: list[bool] = []
    start = threading.Barrier(len(dbs))

    def approve(db: GatewayDB) -> None:
        auth = Authorizer(settings(policy="pairing"), db, clock)
        start.wait()
        replies.append(auth.approve_code(code, by=ADMIN).ok)

    threads = [threading.Thread(target=approve, args=(db,)) for db in dbs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return replies


def test_a_code_redeemed_by_two_replicas_at_once_is_used_once(
    postgres_url: str, clock: FakeClock
) -> None:
    with GatewayDB(postgres_url) as db_a, GatewayDB(postgres_url) as db_b:
        auth = Authorizer(settings(policy="pairing"), db_a, clock)
        for n in range(5):
            code = code_of(auth.decide(dm(f"{50 + n}")).reply)
            assert sorted(redeem_at_once(code, (db_a, db_b), clock)) == [False, True], n
            assert db_b.get_access(f"telegram:{50 + n}") is not None


def test_the_pairing_quota_holds_across_replicas(postgres_url: str, clock: FakeClock) -> None:
    with GatewayDB(postgres_url) as db_a, GatewayDB(postgres_url) as db_b:
        now = clock.time()
        assert db_a.take_pairing_quota("telegram:42", now, 3600, 2)
        assert db_b.take_pairing_quota("telegram:42", now, 3600, 2)
        assert not db_a.take_pairing_quota("telegram:42", now, 3600, 2)
        assert not db_b.take_pairing_quota("telegram:42", now, 3600, 2)
        assert db_b.take_pairing_quota("telegram:43", now, 3600, 2)
        assert db_a.take_pairing_quota("telegram:42", now + 3601, 3600, 2)

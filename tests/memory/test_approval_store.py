"""The approvals' table on SQLite and PostgreSQL: decided once, and what a restart expires."""

from __future__ import annotations

from memory.approvals import Approval, ApprovalStore
from memory.database import Location

pytest_plugins = ["tests.fakes.tables_backends"]


def _pending(owner: str, expires_at: float = 200.0) -> Approval:
    return Approval(
        "", "telegram:1", "telegram:1", "telegram", "-100", None, "s1", "demo__echo",
        '{"text": "hi"}', owner, "pending", None, 100.0, expires_at,
    )  # fmt: skip


def test_an_approval_is_decided_once(where: Location) -> None:
    with ApprovalStore(where) as store:
        row = store.create(_pending("p1"))
        assert len(row.id) == 6 and row.status == "pending"
        assert store.get(row.id) == row
        assert store.decide(row.id, "approved", "telegram:1")
        assert not store.decide(row.id, "denied", "telegram:1")  # the first answer stands
        decided = store.get(row.id)
        assert decided is not None
        assert (decided.status, decided.decided_by) == ("approved", "telegram:1")
        assert store.get("nosuch") is None


def test_a_restart_expires_what_another_process_left_pending(where: Location) -> None:
    with ApprovalStore(where) as store:
        old = store.create(_pending("gone"))
        late = store.create(_pending("other replica", expires_at=150.0))
        mine = store.create(_pending("me"))
        answered = store.create(_pending("gone"))
        store.decide(answered.id, "denied", "telegram:1")
        # several replicas: only what is past its deadline
        assert [r.id for r in store.expire_left_by("me", past=160.0)] == [late.id]
        expired = store.expire_left_by("me")  # one process: everything another left
        assert [(r.id, r.status) for r in expired] == [(old.id, "expired")]
        assert store.get(mine.id) is not None and store.get(mine.id).status == "pending"  # type: ignore[union-attr]
    with ApprovalStore(where) as again:  # the rows outlive the process
        assert again.get(old.id).status == "expired"  # type: ignore[union-attr]

"""The durable inbox: deliveries recorded before they are acknowledged, a batch at a time."""

from __future__ import annotations

from pathlib import Path

from gateway.sessions import Inbox
from tests.fakes.clock import FakeClock


def test_a_batch_is_recorded_in_one_commit_with_an_answer_for_each(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path / "state.db", FakeClock(1000.0))
    try:
        assert inbox.take("telegram", "1", '{"n": 1}')
        assert inbox._conn is not None
        statements: list[str] = []
        inbox._conn.set_trace_callback(statements.append)
        fresh = inbox.take_many(
            "telegram", [("1", '{"n": 1}'), ("2", '{"n": 2}'), ("2", '{"again": 2}'), ("3", "{}")]
        )
        inbox._conn.set_trace_callback(None)
        assert fresh == [False, True, False, True]  # known, new, repeated in the batch, new
        assert [s for s in statements if s == "COMMIT"] == ["COMMIT"]
        pending = inbox.pending("telegram")
        assert [(p.receipt, p.payload) for p in pending] == [
            ("1", '{"n": 1}'),
            ("2", '{"n": 2}'),
            ("3", "{}"),
        ]
        assert inbox.take_many("telegram", []) == []
        assert inbox.take_many("slack", [("1", "{}")]) == [True]  # receipts are per platform
    finally:
        inbox.close()

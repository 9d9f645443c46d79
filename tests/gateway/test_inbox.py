"""The durable inbox: deliveries recorded before they are acknowledged, a batch at a time."""

from __future__ import annotations

from pathlib import Path

from gateway.sessions import Inbox
from gateway.sessions._inbox import KEEP_PENDING, KEEP_SETTLED
from memory.database import Location
from tests.fakes.clock import FakeClock

pytest_plugins = ["tests.fakes.tables_backends"]


def test_a_batch_is_recorded_in_one_commit_with_an_answer_for_each(where: Location) -> None:
    inbox = Inbox(where, FakeClock(1000.0))
    try:
        assert inbox.take("telegram", "1", '{"n": 1}')
        statements: list[str] = []
        if isinstance(where, Path):  # PostgreSQL: every operation is one transaction anyway
            assert inbox._conn is not None
            inbox._conn.set_trace_callback(statements.append)
        fresh = inbox.take_many(
            "telegram", [("1", '{"n": 1}'), ("2", '{"n": 2}'), ("2", '{"again": 2}'), ("3", "{}")]
        )
        if isinstance(where, Path):
            assert inbox._conn is not None
            inbox._conn.set_trace_callback(None)
            assert [s for s in statements if s == "COMMIT"] == ["COMMIT"]
        assert fresh == [False, True, False, True]  # known, new, repeated in the batch, new
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


def test_pending_is_oldest_first_then_in_the_order_taken(where: Location) -> None:
    clock = FakeClock(1000.0)
    with Inbox(where, clock) as inbox:
        inbox.take_many("telegram", [("z", "1"), ("b", "2"), ("m", "3")])
        clock.set(999.0)  # a clock stepping back: the earlier time still comes first
        inbox.take("telegram", "y", "0")
        clock.set(1000.0)
        inbox.take_many("telegram", [("a", "4"), ("c", "5")])
        inbox.take("slack", "a", "other platform")
        pending = inbox.pending("telegram")
        assert [(p.receipt, p.received_at) for p in pending] == [
            ("y", 999.0),
            ("z", 1000.0),
            ("b", 1000.0),
            ("m", 1000.0),
            ("a", 1000.0),
            ("c", 1000.0),
        ]
        assert all(p.platform == "telegram" and p.shown == () for p in pending)
        assert [p.payload for p in inbox.pending("slack")] == ["other platform"]


def test_done_shown_settled_and_prune(where: Location) -> None:
    clock = FakeClock(1000.0)
    with Inbox(where, clock) as inbox:
        inbox.take_many("telegram", [("1", "a"), ("2", "b"), ("3", "c")])
        assert inbox.is_settled("telegram", "1") is False
        assert inbox.is_settled("telegram", "9") is None
        inbox.shown("telegram", ["2", "3"], ["m-1", "m-2"])
        inbox.done("telegram", ["1"])
        clock.set(1010.0)
        inbox.done("telegram", ["1", "unknown"])  # settled once; the first time is kept
        assert inbox.is_settled("telegram", "1") is True
        assert [(p.receipt, p.shown) for p in inbox.pending("telegram")] == [
            ("2", ("m-1", "m-2")),
            ("3", ("m-1", "m-2")),
        ]
        assert not inbox.take("telegram", "1", "a")  # a settled delivery is still known

        clock.set(1000.0 + KEEP_SETTLED + 1)
        assert inbox.prune() == 1  # the settled row; the pending ones stay
        assert inbox.is_settled("telegram", "1") is None
        assert [p.receipt for p in inbox.pending("telegram")] == ["2", "3"]
        clock.set(1000.0 + KEEP_PENDING + 1)
        assert inbox.prune() == 2
        assert inbox.pending("telegram") == []
        assert inbox.prune() == 0


def test_an_answer_noted_ahead_keeps_the_shown_messages_and_they_keep_it(
    where: Location,
) -> None:
    with Inbox(where, FakeClock(1000.0)) as inbox:
        inbox.take_many("telegram", [("1", "a"), ("2", "b")])
        inbox.shown("telegram", ["1"], ["m-1"])
        inbox.answering("telegram", ["1", "2"], "Forty-two.")
        inbox.shown("telegram", ["1"], ["m-1", "m-2"])  # the answer needed a second message
        assert [(p.shown, p.answer) for p in inbox.pending("telegram")] == [
            (("m-1", "m-2"), "Forty-two."),
            ((), "Forty-two."),
        ]
        found = inbox.delivery("telegram", "1")
        assert found is not None and found[0].answer == "Forty-two."


def test_two_replicas_share_one_inbox(postgres_url: str) -> None:
    clock = FakeClock(1000.0)
    with Inbox(postgres_url, clock) as first, Inbox(postgres_url, clock) as second:
        assert first.take_many("slack", [("e1", "{}"), ("e2", "{}")]) == [True, True]
        assert second.take_many("slack", [("e2", "{}"), ("e3", "{}")]) == [False, True]
        assert [p.receipt for p in second.pending("slack")] == ["e1", "e2", "e3"]
        second.shown("slack", ["e1"], ["ts-1"])
        second.done("slack", ["e2"])
        assert first.is_settled("slack", "e2") is True
        assert [(p.receipt, p.shown) for p in first.pending("slack")] == [
            ("e1", ("ts-1",)),
            ("e3", ()),
        ]

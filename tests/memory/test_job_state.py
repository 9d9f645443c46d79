"""The job ledger: a step marked done once, on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading

from memory.database import Location
from memory.jobs._state import JobState

pytest_plugins = ["tests.fakes.tables_backends"]


def test_a_step_is_marked_done_once_and_remembered(where: Location) -> None:
    with JobState(where) as state:
        assert not state.is_done("flush:s1")
        assert state.mark_done("flush:s1", at=100.0)
        assert not state.mark_done("flush:s1")  # the second time: already done
        assert not state.mark_done("flush:s1", at=200.0)
        assert state.is_done("flush:s1")
        assert not state.is_done("flush:s2")
        assert state.mark_done("sync:s1:3")
    with JobState(where) as reopened:
        assert reopened.is_done("flush:s1") and reopened.is_done("sync:s1:3")
        with reopened._locked() as conn:
            (done_at,) = conn.execute(
                "SELECT done_at FROM job_ledger WHERE key = ?", ("flush:s1",)
            ).fetchone()
        assert done_at == 100.0  # the first mark is kept


def test_racing_marks_have_one_winner(where: Location) -> None:
    with JobState(where) as state:
        wins: list[bool] = []
        start = threading.Barrier(8)

        def mark() -> None:
            start.wait()
            wins.append(state.mark_done("flush:race", at=1_700_000_000.123456))

        threads = [threading.Thread(target=mark) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(wins) == [False] * 7 + [True]


def test_two_replicas_share_the_ledger(postgres_url: str) -> None:
    with JobState(postgres_url) as first, JobState(postgres_url) as second:
        assert first.mark_done("flush:s1")
        assert second.is_done("flush:s1")
        assert not second.mark_done("flush:s1")
        assert second.mark_done("flush:s2")
        assert first.is_done("flush:s2")

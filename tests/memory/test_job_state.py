"""The job state and the job ledger on SQLite and on PostgreSQL: a step marked done once,
a job kept until done, a session lease that fences a stale run."""

from __future__ import annotations

import threading

import pytest

from memory.database import Location
from memory.errors import StaleLeaseError
from memory.jobs import JobLedger, JobSpec
from memory.jobs._ledger import ALREADY_DONE, Fence, fenced
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


def test_the_ledger_keeps_jobs_until_done_and_fences_a_stale_lease(where: Location) -> None:
    """2 jobs of one session: the lease goes to one run at a time (epoch 1, then 2 once it
    lapsed), and the run holding epoch 1 can then mark nothing (0 of 2 writes)."""
    first = JobSpec("agent.jobs.sync_turn", ("s", 1), "s", "sync-s-1")
    second = JobSpec("agent.jobs.sync_turn", ("s", 2), "s", "sync-s-2")
    with JobLedger(where) as ledger, JobState(where) as state:
        assert ledger.record(first) and ledger.record(second)
        assert not ledger.record(first)  # already waiting
        assert [job.job_id for job in ledger.unfinished()] == ["sync-s-1", "sync-s-2"]
        paused = ledger.take_lease("s", "sync-s-1", "host:1:a", ttl=0.0)
        assert paused == 1
        assert ledger.take_lease("s", "sync-s-1", "host:1:b", ttl=60.0) == 2  # lapsed
        assert ledger.take_lease("s", "sync-s-1", "host:1:c", ttl=60.0) is None  # held
        with fenced(Fence("s", paused)), pytest.raises(StaleLeaseError):
            state.mark_done("sync:s:1")
        with pytest.raises(StaleLeaseError):
            ledger.finish("sync-s-1", Fence("s", paused))
        assert not state.is_done("sync:s:1")
        with fenced(Fence("s", 2)):
            assert state.mark_done("sync:s:1")
        ledger.finish("sync-s-1", Fence("s", 2))
        assert ledger.state_of("sync-s-1") == "done"
        assert ledger.take_lease("s", "sync-s-1", "host:1:c", ttl=60.0) == ALREADY_DONE
        assert ledger.take_lease("s", "sync-s-2", "host:1:c", ttl=60.0) == 3
        assert [job.job_id for job in ledger.unfinished()] == ["sync-s-2"]
        assert ledger.record(first)  # enqueued again once done: it runs again, last
        assert [job.job_id for job in ledger.unfinished()] == ["sync-s-2", "sync-s-1"]

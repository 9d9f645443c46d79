"""Ending a session through the ``end_session`` job: the flush, the ledger, the record."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rq.utils import import_attribute

from agent import jobs
from agent.flush import FLUSH_PROMPT
from agent.jobs import JobContext, JobScheduler
from memory.jobs import InProcessQueue, import_function
from tests.agent.conftest import MakeAgent, system_of
from tests.fakes import FakeOpenAI


@pytest.fixture
def end_jobs() -> Iterator[list[JobContext]]:
    """Job contexts made by a test, configured for this process and closed after it."""
    made: list[JobContext] = []
    yield made
    for context in made:
        context.close()


def is_flush(request: dict[str, Any]) -> bool:
    return [t["function"]["name"] for t in request.get("tools", [])] == ["memory"]


async def test_end_session_flushes_with_the_prompt_the_model_saw_and_keeps_it(
    tmp_path: Path, server: FakeOpenAI, make_agent: MakeAgent, end_jobs: list[JobContext]
) -> None:
    agent = await make_agent(memory={"flush_min_turns": 1})
    server.reply("ok")
    await agent.run_turn("I am a botanist")
    seen = system_of(server.last_request)
    context = JobContext(home=tmp_path, config=agent.config)
    end_jobs.append(context)
    jobs.configure(context)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Is a botanist"})
    sid = agent.session.session_id

    queue = InProcessQueue(retries=0)
    try:
        JobScheduler(queue, context.state).end_session(sid, "console_exit")
        assert await asyncio.to_thread(queue.flush, 30)
        assert queue.status().failed == 0
    finally:
        queue.close()

    flushes = [r for r in server.requests if is_flush(r)]
    assert len(flushes) == 1
    assert flushes[0]["messages"][-1]["content"] == FLUSH_PROMPT
    assert system_of(flushes[0]) == seen
    record = await agent.db.get_session(sid)
    assert record is not None
    assert record.system_prompt == seen
    assert record.end_reason == "console_exit" and record.ended_at is not None
    agent.store.load_from_disk()
    assert agent.store.user_entries == ["Is a botanist"]

    sent = len(server.requests)
    assert await asyncio.to_thread(jobs.end_session, sid, "console_exit") == "ended"
    assert len(server.requests) == sent  # the flush is done once


async def test_end_session_without_enough_turns_asks_nothing(
    tmp_path: Path, server: FakeOpenAI, make_agent: MakeAgent, end_jobs: list[JobContext]
) -> None:
    agent = await make_agent(memory={"flush_min_turns": 2})
    server.reply("ok")
    await agent.run_turn("hello")
    context = JobContext(home=tmp_path, config=agent.config)
    end_jobs.append(context)
    jobs.configure(context)
    sent = len(server.requests)

    assert await asyncio.to_thread(jobs.end_session, agent.session.session_id, "idle") == "ended"

    assert len(server.requests) == sent
    record = await agent.db.get_session(agent.session.session_id)
    assert record is not None and record.end_reason == "idle"


@pytest.mark.parametrize(
    "path",
    [
        "agent.jobs.sync_turn",
        "agent.jobs.rewind",
        "agent.jobs.queue_prefetch",
        "agent.jobs.prefetch",
        "agent.jobs.end_session",
    ],
)
def test_job_names_in_queues_of_earlier_versions_still_resolve(path: str) -> None:
    """Queues (the outbox, Redis) hold jobs by these names across an upgrade."""
    function = import_function(path)
    assert function is getattr(jobs, path.rpartition(".")[2])
    assert import_attribute(path) is function  # how an rq worker finds it

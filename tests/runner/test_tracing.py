"""Traces without content: a full gateway (testchat platform, the local holographic
provider, fake LLM) sends its spans over OTLP/HTTP to a collector written from the
OTLP specification (``/v1/traces``, ``ExportTraceServiceRequest`` in protobuf, decoded
with the official ``opentelemetry-proto`` package). The span tree of one turn with a
tool call and a background job is read off what the collector received."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.otlp_collector import Collector, attributes, running_collector
from tests.runner.conftest import Gateway, GatewayFactory

SECRET_TEXT = "my sister Priscilla moves to Reykjavik in March"
SECRET_FACT = "Priscilla lives on Laugavegur 42"
ANSWER = "Noted, I will remember Reykjavik."
PERSON = "testchat:2"
CHAT = "dm-2"
ROOT = Path(__file__).resolve().parents[2]


async def turn_with_a_tool_and_a_job(gw: Gateway, server: FakeOpenAI) -> None:
    server.tool_call("fact_store", {"action": "add", "content": SECRET_FACT})
    server.reply(ANSWER)
    reply = await gw.ask(SECRET_TEXT, user="2")
    assert reply.text == ANSWER
    await gw.settle()  # the turn's sync job has run
    await gw.runner.shutdown(5)
    await gw.stack.close()  # the last spans are sent within the shutdown


async def test_one_turn_is_one_trace_of_its_steps_without_its_words(
    make_gateway: GatewayFactory, server: FakeOpenAI, collector: Collector
) -> None:
    gw = await make_gateway(
        CHORUS_MEMORY__PROVIDER="holographic",
        CHORUS_OBSERVABILITY__OTLP_ENDPOINT=collector.url,
        CHORUS_OBSERVABILITY__SERVICE_NAME="chorus-test",
    )
    model = gw.stack.settings.llm.model
    await turn_with_a_tool_and_a_job(gw, server)

    assert collector.services == {"chorus-test"}
    turn = collector.one("chorus.turn")
    trace_id = turn.trace_id
    assert turn.parent_span_id == b""
    children = {s.name for s in collector.spans if s.parent_span_id == turn.span_id}
    assert {"chorus.intake", "chorus.queue", "chorus.recall", f"chat {model}"} <= children
    assert "execute_tool fact_store" in children
    jobs = {s.trace_id for s in collector.spans if s.name.startswith("chorus.job")}
    for span in collector.spans:
        assert span.trace_id in {trace_id, *jobs}, span.name
    intake, queue = collector.one("chorus.intake"), collector.one("chorus.queue")
    assert turn.start_time_unix_nano == intake.start_time_unix_nano
    assert intake.end_time_unix_nano <= queue.start_time_unix_nano <= queue.end_time_unix_nano

    recall = collector.one("chorus.recall")
    hooks = {s.name for s in collector.spans if s.parent_span_id == recall.span_id}
    assert hooks == {"chorus.provider on_turn_start", "chorus.provider prefetch"}

    turn_calls = [s for s in collector.named(f"chat {model}") if s.trace_id == trace_id]
    calls = sorted(turn_calls, key=lambda s: s.start_time_unix_nano)
    assert len(calls) == 2
    first, second = (attributes(c) for c in calls)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == model
    assert first["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second["gen_ai.response.finish_reasons"] == ["stop"]
    for used in (first, second):
        assert used["gen_ai.usage.input_tokens"] > 0
        assert used["gen_ai.usage.output_tokens"] > 0

    tool = collector.one("execute_tool fact_store")
    assert attributes(tool)["gen_ai.tool.name"] == "fact_store"
    assert attributes(tool)["chorus.outcome"] == "ok"
    assert "gen_ai.tool.call.arguments" not in attributes(tool)
    provider = collector.one("chorus.provider handle_tool_call")
    assert provider.parent_span_id == tool.span_id

    for name in ("chorus.job sync_turn", "chorus.job queue_prefetch"):
        job = collector.one(name)
        assert job.trace_id != trace_id  # its own trace, linked to the turn that queued it
        assert [link.trace_id for link in job.links] == [trace_id]
        assert [link.span_id for link in job.links] == [turn.span_id]
        assert attributes(job)["chorus.session"] == attributes(turn)["chorus.session"]
    ending = collector.one("chorus.job end_session")  # at shutdown: its summary call under it
    (summary,) = [s for s in collector.named(f"chat {model}") if s.trace_id == ending.trace_id]
    assert summary.parent_span_id == ending.span_id
    assert attributes(summary)["chorus.purpose"] == "summary"

    person = attributes(turn)["chorus.person"]
    assert len(person) == 32 and PERSON not in person
    raw = collector.raw
    for words in (SECRET_TEXT, SECRET_FACT, ANSWER, "Priscilla", "Reykjavik", PERSON, CHAT):
        assert words.encode() not in raw, words

    metrics = gw.stack.metrics.render()[0].decode()
    assert f'chorus_llm_calls_total{{model="{model}",outcome="ok"}} 2.0' in metrics


async def test_content_and_ids_only_when_asked_for(
    make_gateway: GatewayFactory, server: FakeOpenAI, collector: Collector
) -> None:
    gw = await make_gateway(
        CHORUS_MEMORY__PROVIDER="holographic",
        CHORUS_OBSERVABILITY__OTLP_ENDPOINT=collector.url,
        CHORUS_OBSERVABILITY__INCLUDE_CONTENT="true",
        CHORUS_OBSERVABILITY__INCLUDE_PERSON_IDS="true",
    )
    await turn_with_a_tool_and_a_job(gw, server)

    assert attributes(collector.one("chorus.intake"))["chorus.message.text"] == SECRET_TEXT
    assert attributes(collector.one("chorus.turn"))["chorus.person.id"] == PERSON
    arguments = attributes(collector.one("execute_tool fact_store"))["gen_ai.tool.call.arguments"]
    assert SECRET_FACT in arguments
    assert CHAT.encode() in collector.raw


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_collector_away_costs_no_answer_and_one_warning(
    make_gateway: GatewayFactory, server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    gw = await make_gateway(
        CHORUS_OBSERVABILITY__OTLP_ENDPOINT=f"http://127.0.0.1:{closed_port()}",
        CHORUS_OBSERVABILITY__EXPORT_TIMEOUT_SECONDS="1",
    )
    for n in range(3):
        server.reply(f"answer {n}")
        assert (await gw.ask(f"question {n}")).text == f"answer {n}"
    await gw.runner.shutdown(5)
    await gw.stack.close()
    tracing = ("opentelemetry", "agent.tracing", "urllib3", "requests")
    warnings = [
        r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(tracing)
    ]
    assert len(warnings) == 1, [r.message for r in warnings]
    assert "could not be sent" in warnings[0].message


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    async with running_collector() as received:
        yield received


def test_without_an_endpoint_nothing_of_the_sdk_is_imported(tmp_path: Path) -> None:
    """Off by default: a gateway process answers a turn and never loads the trace SDK,
    the exporter or chorus's tracer."""
    script = """
import asyncio, sys
from pathlib import Path
from agent import tracing
from gateway.adapters import TestChatAdapter
from gateway.app import open_stack
from gateway.config import load_settings
from tests.fakes import FakeOpenAI

async def main(home):
    with FakeOpenAI() as server:
        server.reply("hi")
        env = {"CHORUS_HOME": str(home), "OPENAI_BASE_URL": server.base_url,
               "CHORUS_AUTH__POLICY": "open"}
        adapter = TestChatAdapter()
        stack = await open_stack(load_settings(home, env), adapters=[adapter])
        await stack.start()
        await adapter.push("hello", user_id="2")
        assert (await adapter.pop(20)).text == "hi"
        await stack.runner.shutdown(5)
        await stack.close()
    assert not tracing.current().enabled
    # (redis-py imports the OpenTelemetry API and metrics SDK itself when they are installed)
    ours = ("agent.tracing._otel", "opentelemetry.sdk.trace", "opentelemetry.exporter")
    loaded = sorted(m for m in sys.modules if m.startswith(ours))
    assert loaded == [], loaded
    print("untraced")

asyncio.run(main(Path(sys.argv[1])))
"""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    done = subprocess.run(
        [sys.executable, "-c", script, str(home)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "untraced"

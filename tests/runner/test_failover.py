"""``llm.fallbacks``: a second OpenAI-compatible endpoint answers when the primary cannot.

Two fake endpoints (``tests.fakes.openai_server``), the real ``openai`` client and
the whole gateway with its test adapter: what each endpoint was asked shows
where a turn went; the usage ledger shows which model answered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gateway import _texts as t
from tests.fakes import FakeOpenAI, Reply
from tests.runner.conftest import Gateway, GatewayFactory

BACKUP_KEY = "sk-backup-0123456789"
PERSON = "testchat:2"


@pytest.fixture
def backup() -> Iterator[FakeOpenAI]:
    """The second endpoint: it answers only with its own key."""
    with FakeOpenAI(default_reply="from the backup", api_key=BACKUP_KEY) as fake:
        yield fake


async def failing_over(
    make_gateway: GatewayFactory, home: Path, backup: FakeOpenAI, **env: str
) -> Gateway:
    """A gateway whose ``llm.fallbacks`` is ``backup`` (model ``backup-model``), its key
    in ``BACKUP_API_KEY``."""
    home.mkdir(mode=0o700, exist_ok=True)
    entry = {"base_url": backup.base_url, "model": "backup-model", "api_key_env": "BACKUP_API_KEY"}
    config = home / "config.yaml"
    config.write_text(yaml.safe_dump({"llm": {"fallbacks": [entry]}}), encoding="utf-8")
    config.chmod(0o600)
    return await make_gateway(BACKUP_API_KEY=BACKUP_KEY, **env)


async def answered_by(gw: Gateway) -> list[str]:
    """The model of each ledger row of the person, oldest first."""
    assert gw.stack.meter is not None
    await gw.stack.meter.flush()
    return [row.model for row in gw.stack.meter.ledger.rows(PERSON)]


@pytest.mark.parametrize("status", [503, 429])
async def test_a_refusing_primary_hands_the_turn_to_the_fallback_and_the_next_turn_goes_back(
    make_gateway: GatewayFactory,
    chorus_home: Path,
    server: FakeOpenAI,
    backup: FakeOpenAI,
    status: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Was: the primary retried (``llm.max_retries``) and, when it stayed down, the person
    got "my language model is unreachable"."""
    gw = await failing_over(make_gateway, chorus_home, backup)
    server.push(Reply.of_error(status, retry_after=None))
    backup.reply("Lima, from the backup.")
    assert (await gw.ask("capital of Peru?")).text == "Lima, from the backup."
    assert len(server.requests) == 1  # not retried: the fallback is asked at once
    assert [r["model"] for r in backup.requests] == ["backup-model"]
    server.reply("Quito, from the primary.")
    assert (await gw.ask("and of Ecuador?")).text == "Quito, from the primary."
    assert len(server.requests) == 2 and len(backup.requests) == 1
    assert await answered_by(gw) == ["backup-model", "gpt-4o-mini"]
    moved = [r for r in caplog.records if "the answer comes from" in r.getMessage()]
    assert len(moved) == 1 and moved[0].levelno == logging.WARNING
    line = moved[0].getMessage()
    assert "127.0.0.1" in line and "backup-model" in line and f"HTTP {status}" in line
    assert BACKUP_KEY not in caplog.text and "sk-test" not in caplog.text
    metrics = gw.stack.metrics.render()[0].decode()
    assert 'chorus_llm_failovers_total{model="backup-model"} 1.0' in metrics


async def test_a_hanging_primary_is_left_after_its_timeout_and_asked_again_next_turn(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, backup: FakeOpenAI
) -> None:
    gw = await failing_over(make_gateway, chorus_home, backup, CHORUS_LLM__TIMEOUT_SECONDS="0.5")
    server.push(Reply.of_hang(60))
    backup.reply("Lima.")
    assert (await gw.ask("capital of Peru?")).text == "Lima."
    server.reply("Quito.")
    assert (await gw.ask("and of Ecuador?")).text == "Quito."
    assert len(server.requests) == 2 and len(backup.requests) == 1
    assert await answered_by(gw) == ["backup-model", "gpt-4o-mini"]


async def test_a_rate_limited_primary_is_passed_over_until_its_reported_reset(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, backup: FakeOpenAI
) -> None:
    gw = await failing_over(make_gateway, chorus_home, backup)
    server.push(
        Reply.of_error(429, "Rate limit reached", retry_after=60, retry_header="retry-after")
    )
    assert (await gw.ask("one")).text == "from the backup"
    assert (await gw.ask("two")).text == "from the backup"  # 60 s have not passed
    assert len(server.requests) == 1 and len(backup.requests) == 2
    await gw.clock.advance(61)
    server.reply("the primary again")
    assert (await gw.ask("three")).text == "the primary again"
    assert len(server.requests) == 2 and len(backup.requests) == 2


async def test_an_answer_that_dies_mid_stream_is_finished_by_the_fallback_in_the_same_message(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, backup: FakeOpenAI
) -> None:
    """Was: the half answer stayed, ended by "(cut off: …)"."""
    gw = await failing_over(make_gateway, chorus_home, backup)
    half = "The capital of Peru is Lima, and it lies by the Pacific."
    server.push(Reply.of_text(half, stall_after=2, stall=0.3, drop_after=4))
    backup.reply("The capital of Peru is Lima.")
    answer = await gw.ask("capital of Peru?")
    await gw.settle()
    [message] = gw.adapter.sent  # one message in the chat, no second answer beside it
    assert message.message_id == answer.message_id
    assert message.text == "The capital of Peru is Lima."
    assert "The capital" in message.history  # the primary's words were shown, then edited
    assert t.CUT_OFF_NOTE.strip() not in message.text and message.done
    assert await answered_by(gw) == ["backup-model"]


async def test_a_request_the_primary_refuses_as_wrong_is_not_sent_to_the_fallback(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, backup: FakeOpenAI
) -> None:
    gw = await failing_over(make_gateway, chorus_home, backup)
    server.push(Reply.of_error(400, "Invalid 'messages'"))
    assert (await gw.ask("capital of Peru?")).text == t.LLM_UNREACHABLE
    assert len(server.requests) == 1 and backup.requests == []


async def test_when_every_endpoint_fails_the_person_gets_one_apology(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, backup: FakeOpenAI
) -> None:
    """Each round asks the primary, then the fallback; ``llm.max_retries`` more rounds."""
    gw = await failing_over(make_gateway, chorus_home, backup, CHORUS_LLM__MAX_RETRIES="1")
    server.push(*(Reply.of_error(503) for _ in range(2)))
    backup.push(*(Reply.of_error(502) for _ in range(2)))
    assert (await gw.ask("capital of Peru?")).text == t.LLM_UNREACHABLE
    assert len(server.requests) == 2 and len(backup.requests) == 2
    await gw.settle()
    assert gw.adapter.texts("dm-2") == [t.LLM_UNREACHABLE]


async def test_a_fallback_whose_model_does_not_cache_gets_no_cache_markers(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, backup: FakeOpenAI
) -> None:
    """A Claude primary's requests carry ``cache_control``; another model's need not."""
    gw = await failing_over(make_gateway, chorus_home, backup, CHORUS_LLM__MODEL="claude-sonnet")
    server.push(Reply.of_error(503))
    assert (await gw.ask("capital of Peru?")).text == "from the backup"
    assert "cache_control" in str(server.requests[0]["messages"])
    assert "cache_control" not in str(backup.requests[0]["messages"])

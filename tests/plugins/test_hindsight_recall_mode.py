"""Hindsight's ``recall_mode``: injected recall, tools, or both (real client, FakeHindsight)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.memory.hindsight import HindsightProvider
from plugins.memory.hindsight._config import parse
from tests.fakes.hindsight_server import FakeHindsight

ALICE = "telegram:1"
TOOLS = ["hindsight_retain", "hindsight_recall", "hindsight_reflect"]


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


def open_provider(
    home: Path, fake: FakeHindsight, context: str, **config: str
) -> HindsightProvider:
    provider = HindsightProvider(environ={"HINDSIGHT_API_KEY": fake.api_key or ""})
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context=context,
        config={"base_url": fake.base_url, **config},
    )
    return provider


@pytest.mark.parametrize(
    ("mode", "injects", "tools"),
    [("hybrid", True, TOOLS), ("context", True, []), ("tools", False, TOOLS)],
)
def test_recall_modes(
    tmp_path: Path, fake: FakeHindsight, mode: str, injects: bool, tools: list[str]
) -> None:
    writer = open_provider(tmp_path, fake, "background")
    writer.sync_turn("My sister Anna lives in Lisbon.", "Nice.")
    writer.on_session_end([])
    recalls_before = len(fake.calls("recall"))
    worker = open_provider(tmp_path, fake, "background", recall_mode=mode)
    worker.queue_prefetch("where does Anna live")
    gateway = open_provider(tmp_path, fake, "primary", recall_mode=mode)
    recalled = gateway.prefetch("where does my sister Anna live")
    assert ("Anna lives in Lisbon" in recalled) is injects
    assert len(fake.calls("recall")) - recalls_before == (2 if injects else 0)
    assert [s["name"] for s in gateway.get_tool_schemas()] == tools
    block = gateway.system_prompt_block()
    assert ("hindsight_recall" in block) is bool(tools)
    assert ("arrives with that message" in block) is injects
    answer = json.loads(gateway.handle_tool_call("hindsight_recall", {"query": "Anna"}))
    if tools:
        assert answer["success"] is True and "Anna lives in Lisbon" in json.dumps(answer)
    else:
        assert answer == {"success": False, "error": "unknown tool 'hindsight_recall'"}


def test_recall_mode_defaults_to_hybrid_and_is_strict() -> None:
    assert parse({}, {}).recall_mode == "hybrid"
    assert parse({"recall_mode": " Tools "}, {}).recall_mode == "tools"
    with pytest.raises(ValueError, match=r"memory\.providers\.hindsight\.recall_mode"):
        parse({"recall_mode": "both"}, {})

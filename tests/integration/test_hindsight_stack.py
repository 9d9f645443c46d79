"""``memory.provider: hindsight`` on the whole in-process stack: ``recall_mode`` decides
whether recall reaches the model's message, its tools, or both (FakeHindsight)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.hindsight_server import FakeHindsight
from tests.integration.conftest import build_stack, close_stack, stack_settings


@pytest.fixture
def hindsight() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


@pytest.mark.parametrize(
    ("mode", "injects", "tools"),
    [("hybrid", True, True), ("context", True, False), ("tools", False, True)],
)
async def test_recall_mode_on_the_stack(
    chorus_home: Path,
    server: FakeOpenAI,
    hindsight: FakeHindsight,
    mode: str,
    injects: bool,
    tools: bool,
) -> None:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text(f"HINDSIGHT_API_KEY={hindsight.api_key or ''}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_MEMORY__PROVIDER="hindsight",
        CHORUS_MEMORY__PROVIDERS__HINDSIGHT__BASE_URL=hindsight.base_url,
        CHORUS_MEMORY__PROVIDERS__HINDSIGHT__RECALL_MODE=mode,
        CHORUS_MEMORY__PREFETCH_TIMEOUT="10",
    )
    stack = await build_stack(settings)
    try:
        first = await stack.agent("s1")
        server.reply("Noted!")
        await first.run_turn("My sister Anna lives in Lisbon.")
        assert stack.background.queue.flush(10)
        stack.background.scheduler.end_session("s1", "idle")
        assert stack.background.queue.flush(10)
        recalls = len(hindsight.calls("recall"))
        agent = await stack.agent("s2")
        server.reply("In Lisbon.")
        await agent.run_turn("Where does my sister Anna live?")
        request = server.requests[-1]
        message = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
        assert ("My sister Anna lives in Lisbon" in str(message)) is injects
        offered = [t["function"]["name"] for t in request.get("tools", [])]
        assert ("hindsight_recall" in offered) is tools
        assert stack.background.queue.flush(10)
        assert (len(hindsight.calls("recall")) > recalls) is injects
    finally:
        await close_stack(stack)

"""After a link, a remote provider (Hindsight) recalls what the person told from another
account: in the live turn (prefetch) and in the background job (warm recall)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.people import PeopleStore
from memory.providers import provider_dir
from plugins.memory.hindsight._buffer import Buffer
from plugins.memory.hindsight._config import Settings as HindsightSettings
from tests.fakes.hindsight_server import FakeHindsight
from tests.people.conftest import DM_ADMIN, SL_ADMIN, SL_ANN, SL_BOB, TG_ANN, Factory

LISBON = "My sister Anna lives in Lisbon since May."


@pytest.fixture
def hindsight() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


def _user_message(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


async def test_the_other_account_recalls_what_the_first_told_and_others_do_not(
    make_gateway: Factory, chorus_home: Path, hindsight: FakeHindsight
) -> None:
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    secrets = chorus_home / ".env"
    secrets.write_text(f"HINDSIGHT_API_KEY={hindsight.api_key or ''}\n")
    secrets.chmod(0o600)
    gw = await make_gateway(
        CHORUS_MEMORY__PROVIDER="hindsight",
        CHORUS_MEMORY__PROVIDERS__HINDSIGHT__BASE_URL=hindsight.base_url,
        CHORUS_MEMORY__PREFETCH_TIMEOUT="10",
    )
    llm = gw.server
    llm.tool_call("hindsight_retain", {"content": LISBON})
    llm.reply("Noted.")
    gw.telegram.message("remember where my sister lives", user_id=TG_ANN)
    await gw.telegram_answer(1)
    bank = HindsightSettings().bank_id(f"telegram:{TG_ANN}")
    assert hindsight.facts(bank) == [LISBON]

    await gw.slack_dm(
        f"/admin link slack:{SL_ANN} telegram:{TG_ANN}", user=SL_ADMIN, channel=DM_ADMIN
    )
    assert "Linked" in (await gw.slack.wait_posted(DM_ADMIN, 1))[0].text

    llm.reply("In Lisbon.")
    await gw.slack_dm("where does my sister Anna live?")
    assert await gw.slack_answer(1) == "In Lisbon."
    assert LISBON in _user_message(llm.requests[-1])
    # the job after the turn warmed the person's recall with the Telegram account's bank
    await asyncio.to_thread(gw.stack.background.queue.flush, 30)
    with PeopleStore(chorus_home / "state.db") as people:
        person = people.person_of(f"slack:{SL_ANN}")
    warm = Buffer(provider_dir(chorus_home, "hindsight", person))
    assert LISBON in warm.cached_recall(HindsightSettings().bank_id(person), 3600)

    # Bob, linked to nobody, is told nothing of it
    llm.reply("I do not know.")
    await gw.slack_dm("where does my sister Anna live?", user=SL_BOB, channel="DBOB0001")
    await gw.slack.wait_posted("DBOB0001", 1)
    assert "Lisbon" not in json.dumps(llm.requests[-1]["messages"])

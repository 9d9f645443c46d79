"""Linking a Telegram and a Slack account into one person, through the real gateway."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from memory.people import PeopleStore
from tests.people.conftest import (
    DM_ADMIN,
    DM_BOB,
    SL_ADMIN,
    SL_ANN,
    SL_BOB,
    TG_ANN,
    Factory,
    TwoPlatforms,
    system_prompt,
)

pytest_plugins = ["tests.fakes.postgres_fixtures"]

CODE = re.compile(r"Your link code: ([A-Z0-9]+)")


def _tool_results(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "tool")


async def _code_on_telegram(gw: TwoPlatforms, seen: int) -> str:
    gw.telegram.message("/link", user_id=TG_ANN)
    answer = await gw.telegram_answer(seen + 1)
    found = CODE.search(answer)
    assert found is not None, answer
    return found.group(1)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "sqlite":
        return {}
    return {"CHORUS_DATABASE__URL": str(request.getfixturevalue("postgres_url"))}


async def test_linked_accounts_share_one_profile_and_one_search(
    make_gateway: Factory, backend: dict[str, str]
) -> None:
    gw = await make_gateway(**backend)
    llm = gw.server
    # before linking: a conversation on Telegram, a profile entry on Slack
    llm.reply("Noted.")
    gw.telegram.message("my locker number is 4711", user_id=TG_ANN)
    await gw.telegram_answer(1)
    llm.tool_call("memory", {"action": "add", "target": "user", "content": "Ann works nights"})
    llm.reply("Saved.")
    await gw.slack_dm("remember that I work nights")
    await gw.slack_answer(1)

    code = await _code_on_telegram(gw, 1)
    await gw.slack_dm(f"/link {code}")
    linked = await gw.slack_answer(2)
    assert "Linked" in linked and f"telegram:{TG_ANN}" in linked and f"slack:{SL_ANN}" in linked
    assert "1 entries added" in linked

    # a fact written from Telegram ...
    llm.tool_call("memory", {"action": "add", "target": "user", "content": "Ann likes teal"})
    llm.reply("Saved too.")
    gw.telegram.message("my favourite colour is teal", user_id=TG_ANN)
    await gw.telegram_answer(3)
    telegram_prompt = system_prompt(llm.requests[-1])
    assert "Ann works nights" in telegram_prompt  # the Slack side's entry, joined

    # ... is in the Slack side's prompt, and the Telegram transcript in its search
    llm.tool_call("session_search", {"query": "locker"})
    llm.reply("It is 4711.")
    await gw.slack_dm("what is my locker number?")
    assert await gw.slack_answer(3) == "It is 4711."
    prompt = system_prompt(llm.requests[-2])
    assert "Ann likes teal" in prompt and "Ann works nights" in prompt
    assert "4711" in _tool_results(llm.requests[-1])

    await gw.slack_dm("/whoami")
    whoami = await gw.slack_answer(4)
    assert f"telegram:{TG_ANN}" in whoami and f"slack:{SL_ANN}" in whoami

    # unlink separates: Slack is its own person again
    await gw.slack_dm("/unlink")
    assert "its own person again" in await gw.slack_answer(5)
    llm.tool_call("session_search", {"query": "locker"})
    llm.reply("I do not know.")
    await gw.slack_dm("and my locker number again?")
    await gw.slack_answer(6)
    assert "Ann likes teal" not in system_prompt(llm.requests[-2])
    assert "4711" not in _tool_results(llm.requests[-1])
    await gw.slack_dm("/whoami")
    assert "No other account is linked" in await gw.slack_answer(7)
    gw.telegram.message("/whoami", user_id=TG_ANN)
    assert "No other account" not in await gw.telegram_answer(4)  # a person of one account


async def test_wrong_expired_reused_and_same_platform_codes_are_refused(
    make_gateway: Factory,
) -> None:
    gw = await make_gateway()
    await gw.slack_dm("/link ABCDEFGH")
    assert "not known" in await gw.slack_answer(1)
    await gw.slack_dm("/link nope!")
    assert "not a link code" in await gw.slack_answer(2)

    code = await _code_on_telegram(gw, 0)
    gw.telegram.message(f"/link {code}", user_id=TG_ANN)
    assert "another platform" in await gw.telegram_answer(2)  # not from the same platform

    await gw.slack_dm(f"/link {code}")
    assert "Linked" in await gw.slack_answer(3)
    await gw.slack_dm(f"/link {code}", user=SL_BOB, channel=DM_BOB)  # a third person
    assert "used already" in (await gw.slack.wait_posted(DM_BOB, 1))[0].text
    people = PeopleStore(gw.stack.settings.home / "state.db")
    try:
        assert people.person_of(f"slack:{SL_BOB}") == f"slack:{SL_BOB}"
        assert people.person_of(f"slack:{SL_ANN}") == people.person_of(f"telegram:{TG_ANN}")
    finally:
        people.close()

    # a code past its ten minutes
    expired = await _code_on_telegram(gw, 2)
    store = PeopleStore(gw.stack.settings.home / "state.db")
    try:
        with store._locked(write=True) as conn:
            conn.execute("UPDATE link_codes SET expires_at = 0 WHERE used_at IS NULL")
    finally:
        store.close()
    await gw.slack_dm(f"/link {expired}", user=SL_BOB, channel=DM_BOB)
    assert "expired" in (await gw.slack.wait_posted(DM_BOB, 2))[1].text


async def test_links_are_audited_and_the_code_never_is(make_gateway: Factory) -> None:
    gw = await make_gateway()
    code = await _code_on_telegram(gw, 0)
    await gw.slack_dm(f"/link {code}")
    await gw.slack_answer(1)
    rows = gw.stack.gateway_db.audit_entries()
    assert [(r.actor, r.command, r.outcome) for r in rows] == [(f"slack:{SL_ANN}", "/link", "ok")]
    assert code not in json.dumps([r.args for r in rows])


async def test_linking_never_makes_an_account_admin(make_gateway: Factory) -> None:
    gw = await make_gateway()
    # the Slack admin links with Ann's Telegram account
    await gw.slack_dm(
        f"/admin link slack:{SL_ADMIN} telegram:{TG_ANN}", user=SL_ADMIN, channel=DM_ADMIN
    )
    assert "Linked" in (await gw.slack.wait_posted(DM_ADMIN, 1))[0].text
    gw.telegram.message("/admin sessions", user_id=TG_ANN)
    assert await gw.telegram_answer(1) == "That command is for admins only."
    gw.telegram.message("/whoami", user_id=TG_ANN)
    whoami = await gw.telegram_answer(2)
    assert "an admin" not in whoami and f"slack:{SL_ADMIN}" in whoami
    await gw.slack_dm("/whoami", user=SL_ADMIN, channel=DM_ADMIN)
    assert "an admin" in (await gw.slack.wait_posted(DM_ADMIN, 2))[1].text
    await gw.slack_dm(f"/admin unlink telegram:{TG_ANN}", user=SL_ADMIN, channel=DM_ADMIN)
    assert "its own person again" in (await gw.slack.wait_posted(DM_ADMIN, 3))[2].text
    commands = [(r.command, r.args, r.outcome) for r in gw.stack.gateway_db.audit_entries()]
    assert ("/admin", f"unlink telegram:{TG_ANN}", "ok") in commands
    assert any(c == "/admin" and a.startswith("link ") and o == "ok" for c, a, o in commands)


async def test_a_linked_person_has_one_budget(make_gateway: Factory) -> None:
    gw = await make_gateway(CHORUS_BUDGETS__USER__TOKENS_PER_DAY="1000")
    link = f"/admin link slack:{SL_ANN} telegram:{TG_ANN}"
    await gw.slack_dm(link, user=SL_ADMIN, channel=DM_ADMIN)
    await gw.slack.wait_posted(DM_ADMIN, 1)
    gw.server.reply("Sure.", usage={"prompt_tokens": 700, "completion_tokens": 100})
    gw.telegram.message("hello", user_id=TG_ANN)
    await gw.telegram_answer(1)
    await gw.slack_dm("/usage")
    assert (await gw.slack_answer(1)).startswith("Today: 800 tokens of 1,000")
    gw.server.reply("Again.", usage={"prompt_tokens": 300, "completion_tokens": 100})
    await gw.slack_dm("and now?")
    await gw.slack_answer(2)
    await gw.slack_dm("one more")  # over the person's day: refused before any LLM call
    refused = await gw.slack_answer(3)
    assert refused.startswith("You have used today's 1,000 tokens")
    assert len(gw.server.requests) == 2


async def test_the_holographic_memories_of_both_accounts_become_the_persons(
    make_gateway: Factory,
) -> None:
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="holographic")
    llm = gw.server
    llm.tool_call("fact_store", {"action": "add", "content": "Ann's bank pin is MANGO77"})
    llm.reply("Saved.")
    gw.telegram.message("keep my bank pin in your fact store", user_id=TG_ANN)
    await gw.telegram_answer(1)

    link = f"/admin link slack:{SL_ANN} telegram:{TG_ANN}"
    await gw.slack_dm(link, user=SL_ADMIN, channel=DM_ADMIN)
    assert "Linked" in (await gw.slack.wait_posted(DM_ADMIN, 1))[0].text
    llm.reply("It is MANGO77.")
    await gw.slack_dm("what is my bank pin?")
    await gw.slack_answer(1)
    assert "MANGO77" in json.dumps(llm.requests[-1]["messages"])


async def test_a_person_unlinks_another_of_their_accounts_only(make_gateway: Factory) -> None:
    gw = await make_gateway()
    code = await _code_on_telegram(gw, 0)
    await gw.slack_dm(f"/link {code}")
    assert "Linked" in await gw.slack_answer(1)
    gw.telegram.message(f"/unlink slack:{SL_BOB}", user_id=TG_ANN)
    assert "not one of your accounts" in await gw.telegram_answer(2)
    gw.telegram.message(f"/unlink slack:{SL_ANN}", user_id=TG_ANN)
    assert f"slack:{SL_ANN} is its own person again" in await gw.telegram_answer(3)
    await gw.slack_dm("/unlink")
    assert "not linked" in await gw.slack_answer(2)
    with PeopleStore(gw.stack.settings.home / "state.db") as people:
        assert people.person_of(f"slack:{SL_ANN}") == f"slack:{SL_ANN}"
        assert people.person_of(f"telegram:{TG_ANN}").startswith("person:")

"""Budgets and the usage ledger through the whole gateway on Telegram."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memory.usage_ledger import UsageLedger
from tests.telegram.conftest import ADMIN, ANN, BOB, GatewayFactory

PRICING = {"gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.6}}


def _priced(home: Path) -> None:
    """``llm.pricing`` in config.yaml (JSON is YAML)."""
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.yaml").write_text(json.dumps({"llm": {"pricing": PRICING}}))


def _ledger(gw) -> UsageLedger:  # type: ignore[no-untyped-def]
    return UsageLedger(gw.stack.settings.home / "state.db")


async def _rows(gw, person: str, n: int):  # type: ignore[no-untyped-def]
    """The ledger's rows of ``person`` once there are ``n`` (they are written off the turn)."""
    with _ledger(gw) as ledger:
        for _ in range(200):
            rows = ledger.rows(person)
            if len(rows) >= n:
                return rows
            await asyncio.sleep(0.02)
    raise AssertionError(f"{n} ledger row(s) of {person} never came")


async def test_each_turn_is_recorded_with_reported_usage_and_cost_and_survives_a_restart(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    _priced(chorus_home)
    gw = await make_gateway(CHORUS_LLM__MODEL="gpt-4o-mini")
    tg, llm = gw.telegram, gw.server
    llm.reply(
        "hello", usage={"prompt_tokens": 1_000, "completion_tokens": 200, "cached_tokens": 400}
    )
    tg.message("hi", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    assert llm.requests[-1]["stream_options"] == {"include_usage": True}
    [row] = await _rows(gw, f"telegram:{ANN}", 1)
    assert (row.input_tokens, row.cached_tokens, row.output_tokens) == (1_000, 400, 200)
    assert row.purpose == "turn" and row.model == "gpt-4o-mini" and not row.estimated
    assert row.session_id
    assert row.cost is not None
    assert abs(row.cost - (600 * 0.15 + 400 * 0.075 + 200 * 0.6) / 1e6) < 1e-12
    await gw.close()

    again = await make_gateway(CHORUS_LLM__MODEL="gpt-4o-mini")
    turn, summary = await _rows(again, f"telegram:{ANN}", 2)  # the shutdown ended the session
    assert turn.input_tokens == 1_000
    assert summary.purpose == "summary" and summary.session_id == turn.session_id
    status = await again.stack.meter.status(f"telegram:{ANN}")  # counters start from the ledger
    assert status.spent_day.tokens == turn.tokens + summary.tokens


async def test_a_call_without_reported_usage_is_estimated_and_an_unpriced_model_counts_tokens(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    _priced(chorus_home)
    gw = await make_gateway(CHORUS_LLM__MODEL="local-model")
    gw.server.reports_usage = False
    gw.server.reply("a short answer")
    gw.telegram.message("hello there", user_id=BOB)
    await gw.telegram.wait_messages(BOB, 1)
    [row] = await _rows(gw, f"telegram:{BOB}", 1)
    assert row.estimated and row.input_tokens > 0 and row.output_tokens > 0
    assert row.cost is None


async def test_near_the_limit_the_person_is_told_once_and_at_it_no_turn_starts(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_BUDGETS__USER__TOKENS_PER_DAY="1000")
    tg, llm = gw.telegram, gw.server
    llm.reply("first", usage={"prompt_tokens": 700, "completion_tokens": 150})
    tg.message("one", user_id=ANN)
    messages = await tg.wait_messages(ANN, 2)
    assert messages[0].text == "first"
    assert "85%" in messages[1].text and "1,000" in messages[1].text

    llm.reply("second", usage={"prompt_tokens": 150, "completion_tokens": 50})
    tg.message("two", user_id=ANN)
    messages = await tg.wait_messages(ANN, 3)
    assert messages[2].text == "second"  # 850 < 1,000: answered; told no second time

    asked = len(llm.requests)
    tg.message("three", user_id=ANN)
    messages = await tg.wait_messages(ANN, 4)
    assert "today's 1,000 tokens" in messages[3].text and "resets on" in messages[3].text
    await asyncio.sleep(0.2)
    assert len(llm.requests) == asked  # no LLM request for the refused turn
    assert len(tg.in_chat(ANN)) == 4  # one refusal, no heads-up again

    llm.reply("for bob")  # another person's budget is their own
    tg.message("hi", user_id=BOB)
    assert (await tg.wait_messages(BOB, 1))[0].text == "for bob"


async def test_usage_and_admin_budget_commands(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_BUDGETS__USER__TOKENS_PER_DAY="10000")
    tg, llm = gw.telegram, gw.server
    llm.reply("hi", usage={"prompt_tokens": 300, "completion_tokens": 100})
    tg.message("hello", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    tg.message("/usage", user_id=ANN)
    [_, usage] = await tg.wait_messages(ANN, 2)
    assert "Today: 400 tokens of 10,000 (4%)" in usage.text
    assert "(no monthly limit)" in usage.text

    tg.message(f"/admin budget telegram:{ANN} tokens_per_day=400", user_id=ADMIN)
    [set_reply] = await tg.wait_messages(ADMIN, 1)
    assert "400 tokens a day" in set_reply.text
    tg.message(f"/admin usage telegram:{ANN}", user_id=ADMIN)
    [_, shown] = await tg.wait_messages(ADMIN, 2)
    assert f"telegram:{ANN}" in shown.text and "400 tokens of 400 (100%)" in shown.text
    tg.message("/admin usage", user_id=ADMIN)
    [*_, month] = await tg.wait_messages(ADMIN, 3)
    assert f"telegram:{ANN} gpt-4o-mini: 1 call(s), 400 tokens" in month.text

    asked = len(llm.requests)
    tg.message("more", user_id=ANN)  # the admin's limit applies at once
    [*_, refused] = await tg.wait_messages(ANN, 3)
    assert "today's 400 tokens" in refused.text
    assert len(llm.requests) == asked

    tg.message(f"/admin budget telegram:{ANN} reset", user_id=ADMIN)
    [*_, reset] = await tg.wait_messages(ADMIN, 4)
    assert "back to the configured limits" in reset.text
    llm.reply("welcome back")
    tg.message("again", user_id=ANN)
    [*_, answered] = await tg.wait_messages(ANN, 4)
    assert answered.text == "welcome back"

    tg.message(f"/admin budget telegram:{ANN} tokens_per_day=lots", user_id=ADMIN)
    [*_, bad] = await tg.wait_messages(ADMIN, 5)
    assert bad.text.startswith("Usage: /admin budget")
    entries = gw.stack.gateway_db.audit_entries()
    budget_rows = [(e.args, e.outcome) for e in entries if e.args.startswith("budget")]
    assert (f"budget telegram:{ANN} tokens_per_day=400", "ok") in budget_rows
    assert (f"budget telegram:{ANN} reset", "ok") in budget_rows

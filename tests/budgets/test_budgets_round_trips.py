"""The budget work of a turn on a real redis-server: its round trips, and that two
meters (two replicas) sharing the counters always agree on them."""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path

import pytest
import redis

from agent.errors import BudgetExhausted
from agent.usage import Charge
from gateway.budgets import BudgetMeter, _shared, open_meter
from gateway.config import load_settings
from memory.usage_ledger import UsageLedger
from tests.fakes.redis_server import RedisServer
from tests.waiting import until

pytest_plugins = ["tests.fakes.redis_fixtures"]

MODEL = "gpt-4o-mini"
ESTIMATE = 1_000
USED = (100, 0, 50)  # input, cached input, output tokens a call reports


@pytest.fixture(autouse=True)
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests count round trips; a loaded machine may stall one past REDIS_WAIT
    (1 s), which would pause the counters for 30 s and is what other tests prove."""
    monkeypatch.setattr(_shared, "REDIS_WAIT", 60.0)


def _meter(home: Path, url: str, tokens_per_day: int) -> BudgetMeter:
    settings = load_settings(
        home,
        {
            "CHORUS_HOME": str(home),
            "CHORUS_REDIS__URL": url,
            "CHORUS_BUDGETS__USER__TOKENS_PER_DAY": str(tokens_per_day),
        },
    )
    return open_meter(lambda: settings, home / "state.db", is_admin=lambda _: False)


def _scripts_run(client: redis.Redis) -> int:
    """Scripts the server ran: every budget round trip is one."""
    stats = client.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval")
    )


async def _turn(meter: BudgetMeter, person: str, fail: bool = False) -> str | None:
    """A turn's budget work as the gateway does it: the check, the call's hold and
    settle (or release, when the call failed), and the heads-up after an answer."""
    charge = Charge(person, f"s-{person}", "turn", "telegram:1")
    await meter.check(person, charge.chat)
    hold = await meter.reserve(charge, MODEL, ESTIMATE)
    if fail:
        await meter.release(hold)
        return None
    await meter.settle(hold, MODEL, USED, estimated=False)
    return await meter.notice(person, charge.chat)


async def test_a_turn_is_two_round_trips_and_both_replicas_see_every_settle(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    one = _meter(home, redis_server.url, 10**9)
    other = _meter(home, redis_server.url, 10**9)  # a second replica on the same Redis
    people = [f"telegram:{n}" for n in range(3)]
    for person in people:  # counters started from the ledger, scripts loaded
        await one.check(person)
        await other.check(person)
    client = redis.Redis.from_url(redis_server.url)
    client.config_resetstat()
    turns = 30
    for n in range(turns):
        await _turn(one, people[n % 3], fail=n % 10 == 9)  # every tenth call fails
    # two round trips a turn (the check's read, the hold); a settle rides on the next one,
    # unless nothing comes within SETTLE_WITHIN (a stalled, loaded machine): then alone.
    # Without carrying, a turn took four (check, hold, settle, the heads-up's read).
    assert _scripts_run(client) <= 2 * turns + turns // 2

    # what the other replica reads includes every settle and release, nothing held, once
    # the last settle went alone (SETTLE_WITHIN: no other round trip carried it)
    async def counted(person: str) -> bool:
        status = await other.status(person)
        calls = sum(1 for n in range(turns) if n % 3 == people.index(person) and n % 10 != 9)
        day = status.spent_day
        return (day.tokens, day.held_tokens) == (calls * (USED[0] + USED[2]), 0)

    for person in people:
        await until(functools.partial(counted, person), what=f"{person}'s settles", poll=0.02)
    await one.aclose()
    await other.aclose()
    with UsageLedger(home / "state.db") as ledger:  # one row a settled call, none a failed
        rows = sum(len(ledger.rows(person)) for person in people)
    assert rows == turns - turns // 10
    client.close()


async def test_a_settle_carried_by_a_cancelled_hold_is_applied_once(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    meter = _meter(home, redis_server.url, 10**9)
    await meter.check("telegram:1")
    await meter.check("telegram:2")
    await _turn(meter, "telegram:1")  # its settle waits for the next round trip
    # the next hold carries it; its turn is stopped while the round trip is under way
    # (Redis holds every command for 0.5 s)
    client = redis.Redis.from_url(redis_server.url)
    client.client_pause(500, all=True)
    charge = Charge("telegram:2", "s2", "turn", "telegram:1")
    stopped = asyncio.create_task(meter.reserve(charge, MODEL, ESTIMATE))
    await asyncio.sleep(0.1)
    assert not stopped.done()
    stopped.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopped
    client.close()
    reader = _meter(home, redis_server.url, 10**9)
    status = await reader.status("telegram:1")
    assert (status.spent_day.tokens, status.spent_day.held_tokens) == (150, 0)
    await meter.aclose()
    status = await reader.status("telegram:1")
    assert (status.spent_day.tokens, status.spent_day.held_tokens) == (150, 0)  # not twice
    await reader.aclose()


async def test_concurrent_holds_of_two_replicas_admit_exactly_what_the_limit_allows(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """The check and the hold are one step: 2 x 20 calls at once, room for 10."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    limit = 10 * ESTIMATE
    meters = [_meter(home, redis_server.url, limit) for _ in range(2)]
    person = "telegram:5"
    for meter in meters:
        await meter.check(person)

    async def try_hold(meter: BudgetMeter) -> object | None:
        try:
            return await meter.reserve(Charge(person, "s5", "turn"), MODEL, ESTIMATE)
        except BudgetExhausted:
            return None

    callers = [m for m in meters for _ in range(20)]
    found = await asyncio.gather(*(try_hold(m) for m in callers))
    holds = [(m, h) for m, h in zip(callers, found, strict=True) if h is not None]
    assert len(holds) == 10
    for meter, hold in holds:  # each call used 150 tokens: 1,500 spent
        await meter.settle(hold, MODEL, USED, estimated=False)
    for meter in meters:  # a read carries the settles not sent yet
        await meter.status(person)
    admitted = [h for h in await asyncio.gather(*(try_hold(m) for m in callers)) if h]
    assert len(admitted) == 9  # 1,500 + 8 x 1,000 < 10,000 <= 1,500 + 9 x 1,000
    status = await meters[0].status(person)
    assert status.spent_day.tokens == 1_500
    assert status.spent_day.held_tokens == 9 * ESTIMATE
    for meter in meters:
        await meter.aclose()


async def test_the_heads_up_counts_what_other_replicas_spent_and_reads_nothing_again(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    one = _meter(home, redis_server.url, 1_000)  # told at 800 tokens
    other = _meter(home, redis_server.url, 1_000)
    person = "telegram:9"
    for _ in range(4):  # 600 tokens spent through the other replica
        assert await _turn(other, person) is None
    await other.aclose()
    await one.check(person)
    client = redis.Redis.from_url(redis_server.url)
    client.config_resetstat()
    assert await _turn(one, person) is None  # 750
    told = await _turn(one, person)  # 900
    assert told is not None and "90%" in told
    assert await _turn(one, person) is None  # 1,050: told once a day
    # check and hold a turn, each settle carried by the next check (or alone, on a
    # stalled machine); no read for the heads-up. Without carrying: 12.
    assert _scripts_run(client) <= 9
    with pytest.raises(BudgetExhausted):
        await one.check(person)
    await one.aclose()
    client.close()


async def test_a_person_s_settle_is_applied_on_its_own_before_their_next_hold(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Another person's hold carries a settle; the same person's next hold does not: the
    call ends for every replica before the next is held (another replica spending the
    last of that budget gets its turn between the two), as without carrying."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    meter = _meter(home, redis_server.url, 10**9)
    for person in ("telegram:1", "telegram:2"):
        await meter.check(person)
    client = redis.Redis.from_url(redis_server.url)

    async def call(person: str) -> None:
        hold = await meter.reserve(Charge(person, "s", "turn"), MODEL, ESTIMATE)
        await meter.settle(hold, MODEL, USED, estimated=False)

    await call("telegram:1")
    await call("telegram:1")  # every script loaded (a first EVALSHA of one is answered NOSCRIPT)
    client.config_resetstat()
    await call("telegram:2")  # its hold carries telegram:1's settle: one script
    assert _scripts_run(client) == 1
    await call("telegram:2")  # telegram:2's settle goes first, alone: two
    assert _scripts_run(client) == 3
    await meter.aclose()
    client.close()


async def test_with_redis_gone_a_waiting_settle_is_reported_and_turns_go_ahead(
    tmp_path: Path, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    meter = _meter(home, redis_server.url, 1_000)
    await meter.check("telegram:1")
    charge = Charge("telegram:1", "s1", "turn")
    hold = await meter.reserve(charge, MODEL, ESTIMATE)
    await meter.settle(hold, MODEL, USED, estimated=False)  # waits for a round trip
    redis_server.stop()
    caplog.set_level(logging.WARNING, logger="gateway.budgets")
    for _ in range(2):  # the calls go ahead unchecked: nobody is refused, nothing raises
        await meter.check("telegram:1")
        hold = await meter.reserve(charge, MODEL, ESTIMATE)
        await meter.settle(hold, MODEL, USED, estimated=False)
    lost = [r.getMessage() for r in caplog.records if "may be lost" in r.getMessage()]
    assert lost and lost[0].startswith("1 budget settle(s) may be lost")
    assert any("budget not checked" in r.getMessage() for r in caplog.records)
    await meter.aclose()
    with UsageLedger(home / "state.db") as ledger:  # the ledger has every call all the same
        assert len(ledger.rows("telegram:1")) == 3

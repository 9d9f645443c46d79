"""Telegram's send budgets shared by replicas: ``ChatPacer`` over ``TelegramBudgets``
(the Redis buckets of ``gateway.replicas``) on a real redis-server.

What is counted is what Redis saw (``INFO commandstats``: the budget scripts run)
and the order the messages went out in; no wall-clock time is asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from gateway.adapters.telegram._pacing import GLOBAL_BURST, ChatPacer
from gateway.app._replicas import TelegramBudgets
from gateway.replicas import Coordination
from tests.fakes.redis_server import scripts_run

if TYPE_CHECKING:
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]


@pytest.fixture
async def replicas(redis_server: RedisServer) -> AsyncIterator[list[ChatPacer]]:
    """Two replicas' pacers, each sharing its budgets through its own Redis client."""
    coordinations = [
        Coordination.open(redis_server.url, name, lease_seconds=10.0) for name in ("a", "b")
    ]
    pacers = []
    for coordination in coordinations:
        pacer = ChatPacer()
        pacer.shared = TelegramBudgets(coordination)
        pacers.append(pacer)
    yield pacers
    for coordination in coordinations:
        await coordination.aclose()


async def test_messages_waiting_for_the_bots_shared_budget_ask_redis_in_turn(
    replicas: list[ChatPacer], redis_server: RedisServer
) -> None:
    for n, pacer in enumerate(replicas):  # the scripts loaded, a token each spent
        await pacer.acquire(str(900 + n))
    before = scripts_run(redis_server.url)
    per_replica = int(GLOBAL_BURST)  # each replica's own budget lets all of them go
    went: list[list[int]] = [[], []]

    async def send(replica: int, chat: int) -> None:
        await replicas[replica].acquire(str(chat))
        went[replica].append(chat)

    chats = [1000 + n for n in range(2 * per_replica)]
    await asyncio.gather(*(send(n % 2, chat) for n, chat in enumerate(chats)))

    asked = scripts_run(redis_server.url) - before
    assert sorted(went[0] + went[1]) == chats
    # the shared budget let about 30 go at once and the rest one by one: each of those
    # asked about twice (told to wait for the next token, then took it); every waiter
    # asking again after each wait made several hundred calls
    assert asked <= 2.5 * len(chats), f"{asked} asks for {len(chats)} messages"
    for sent in went:  # a replica's messages went out in the order they asked
        assert sent == sorted(sent)


async def test_a_chat_waiting_for_its_own_shared_budget_holds_up_no_other_chat(
    replicas: list[ChatPacer],
) -> None:
    first, second = replicas
    for _ in range(3):  # the other replica spends the chat's whole burst
        await second.acquire("42")
    went: list[str] = []

    async def send(chat: str) -> None:
        await first.acquire(chat)
        went.append(chat)

    # the chat waits about a second for its shared budget; the others asked after it
    await asyncio.gather(send("42"), *(send(str(chat)) for chat in range(100, 105)))
    assert went == ["100", "101", "102", "103", "104", "42"]

"""``chorus gateway`` once started: start-up's objects frozen out of the collector's passes."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.adapters import TestChatAdapter
from gateway.app import run_gateway
from tests.fakes import FakeOpenAI
from tests.runner.conftest import gateway_settings
from tests.waiting import until


class Node:
    other: Node | None = None


@pytest.fixture
def restored() -> Iterator[None]:
    """The test process's collector as it was, after the test."""
    yield
    gc.unfreeze()


def listed(target: object) -> bool:
    """``target`` is among the objects the collector walks (frozen ones are not)."""
    return any(o is target for o in gc.get_objects())


@pytest.mark.usefixtures("restored")
async def test_started_gateway_freezes_start_up_objects_and_answers(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    chorus_home.mkdir(mode=0o700)
    settings = gateway_settings(chorus_home, server, CHORUS_GATEWAY__HTTP__PORT="0")
    adapter = TestChatAdapter()
    made_before = [["alive since before the start"]]
    assert listed(made_before)
    service = asyncio.create_task(run_gateway(settings, adapters=[adapter]))
    await until(lambda: adapter.started, 60, "the adapter to start")
    await adapter.push("hello", user_id="3")
    assert (await adapter.pop()).text == "ok"
    await until(lambda: gc.get_freeze_count() > 0, 10, "the start-up objects frozen")
    assert not listed(made_before)  # no later pass walks it
    assert not listed(adapter)  # nor the stack's own objects

    # what is made after the start is collected as before: a cycle no one holds goes
    first, second = Node(), Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second
    gc.collect()
    assert gone() is None

    await adapter.push("again", user_id="3")
    assert (await adapter.pop()).text == "ok"
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(service, 60) == 0

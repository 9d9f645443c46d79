"""A full gateway: in-memory adapter, real openai client, fake LLM, fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gateway.adapters import Delivered, TestChatAdapter
from gateway.app import GatewayStack, open_stack
from gateway.config import Settings, load_settings
from tests.fakes import FakeClock, FakeOpenAI

START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp()


async def _no_sleep(_: float) -> None:
    return None


def gateway_settings(home: Path, server: FakeOpenAI, **env: str | None) -> Settings:
    """Settings from these variables (a None value leaves a default one out) and config.yaml."""
    chosen = {
        "CHORUS_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "CHORUS_AUTH__ADMINS": "testchat:1",
        "CHORUS_AUTH__ALLOWED_USERS": "testchat:2,testchat:3,testchat:4",
        "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
        "CHORUS_SESSIONS__DAILY_RESET_HOUR": "null",
        **env,
    }
    return load_settings(home, {k: v for k, v in chosen.items() if v is not None})


@dataclass
class Gateway:
    stack: GatewayStack
    adapter: TestChatAdapter
    clock: FakeClock
    server: FakeOpenAI

    @property
    def runner(self) -> Any:
        return self.stack.runner

    async def say(self, text: str, user: str = "2", **kwargs: Any) -> None:
        await self.adapter.push(text, user_id=user, **kwargs)

    async def ask(self, text: str, user: str = "2", **kwargs: Any) -> Delivered:
        """Send a message and wait for the next completed reply."""
        await self.say(text, user, **kwargs)
        return await self.adapter.pop(20)

    async def settle(self) -> None:
        """Let every message said be taken and answered (none left owed in the inbox),
        every session worker finish and the background queue drain."""
        for _ in range(2000):
            await asyncio.sleep(0.01)
            if self.runner.sessions.quiet and not self._owed():
                break
        await asyncio.to_thread(self.stack.background.queue.flush, 30)

    def _owed(self) -> bool:
        """A delivery not settled yet: a message still on its way to its turn (a loaded
        machine may take longer than one poll to hand it over) or being answered."""
        try:
            return bool(self.stack.inbox.pending(self.adapter.name))
        except Exception:  # the storage is down in this test: the sessions alone tell
            return False


GatewayFactory = Callable[..., Awaitable[Gateway]]


@pytest.fixture
async def make_gateway(chorus_home: Path, server: FakeOpenAI) -> AsyncIterator[GatewayFactory]:
    opened: list[Gateway] = []

    async def build(clock: FakeClock | None = None, **env: str | None) -> Gateway:
        chorus_home.mkdir(mode=0o700, exist_ok=True)
        settings = gateway_settings(chorus_home, server, **env)
        adapter = TestChatAdapter()
        fake_clock = clock or FakeClock(START)
        stack = await open_stack(
            settings,
            clock=fake_clock,
            llm_sleep=_no_sleep,
            adapters=[adapter],
            load=lambda: gateway_settings(chorus_home, server, **env),
        )
        await stack.start()
        gateway = Gateway(stack, adapter, fake_clock, server)
        opened.append(gateway)
        return gateway

    yield build
    for gateway in opened:
        if not gateway.stack.db._closed:
            await gateway.runner.shutdown(5)
            await gateway.stack.close()


async def close_without_ending(gateway: Gateway) -> None:
    """Simulate a crash: drop the process state without ending any session.

    Running turns stop where they are, as they would in a killed process: nothing
    is answered, settled or ended on the way out.
    """
    sessions = gateway.runner.sessions
    await sessions.reaper.stop()
    workers = [s.worker for s in sessions.sessions if s.worker and not s.worker.done()]
    for worker in workers:
        worker.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    await gateway.stack.close()


def user_messages(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"]

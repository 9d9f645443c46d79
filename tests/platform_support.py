"""What the platform test suites share: settings for a chat gateway and a handle on it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gateway.app import GatewayStack
from gateway.config import Settings, load_settings
from tests.fakes import FakeOpenAI


def chat_settings(
    home: Path, server: FakeOpenAI, platform_env: dict[str, str], **env: str
) -> Settings:
    """Settings for a gateway talking to ``server``, with quiet defaults for tests."""
    environ = {
        "CHORUS_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "CHORUS_AUTH__RATE_LIMIT_PER_MINUTE": "0",
        "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
        "CHORUS_SESSIONS__DAILY_RESET_HOUR": "null",
        **platform_env,
        **env,
    }
    home.mkdir(mode=0o700, exist_ok=True)
    return load_settings(home, environ)


class StackHandle:
    """Mixed into each suite's gateway dataclass, which has a ``stack`` field."""

    stack: GatewayStack

    @property
    def runner(self) -> Any:
        return self.stack.runner

    async def close_stack(self) -> None:
        if not self.stack.db._closed:
            await self.runner.shutdown(5)
            await self.stack.close()

    async def crash(self) -> None:
        """Drop everything as a killed process would: no answer, no settling, no ending."""
        sessions = self.runner.sessions
        await sessions.reaper.stop()
        workers = [s.worker for s in sessions.sessions if s.worker and not s.worker.done()]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for adapter in self.runner.adapters.values():
            await adapter.stop()
        await self.stack.close()

    async def settle(self) -> None:
        """Let every session worker finish."""
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if self.runner.sessions.quiet:
                return

"""One gateway on Telegram and Slack at once: real python-telegram-bot and slack-bolt,
the fake Bot API and Web API, the fake LLM. The same person may write on both."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.adapters.slack import SlackAdapter
from gateway.adapters.telegram import TelegramAdapter
from gateway.app import GatewayStack, open_stack
from gateway.ops import HTTPServer
from tests.fakes import FakeOpenAI
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import SIGNING_SECRET, event_callback, post_event
from tests.fakes.telegram_api import FakeTelegram
from tests.platform_support import StackHandle, chat_settings

TG_ADMIN = 1000
TG_ANN = 1001
TG_BOB = 1002
SL_ADMIN = "UADMIN01"
SL_ANN = "UANN0001"
SL_BOB = "UBOB0001"
DM_ANN = "DANN0001"
DM_BOB = "DBOB0001"
DM_ADMIN = "DADMIN01"


async def _no_sleep(_: float) -> None:
    return None


@pytest.fixture(autouse=True)
def _timedelta_periods(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


@dataclass
class TwoPlatforms(StackHandle):
    stack: GatewayStack
    http: HTTPServer
    telegram: FakeTelegram
    slack: FakeSlack
    slack_adapter: SlackAdapter
    server: FakeOpenAI

    async def slack_dm(self, text: str, *, user: str = SL_ANN, channel: str = DM_ANN) -> None:
        """A direct message on Slack, delivered as Slack posts events."""
        event = self.slack.person(text, user=user, channel=channel)
        url = self.http.url + self.slack_adapter.events_path
        status, _ = await post_event(url, event_callback(event))
        assert status == 200

    async def slack_answer(self, count: int, channel: str = DM_ANN) -> str:
        """The ``count``-th message the bot posted in ``channel``."""
        return (await self.slack.wait_posted(channel, count))[count - 1].text

    async def telegram_answer(self, count: int, chat: int = TG_ANN) -> str:
        return (await self.telegram.wait_messages(chat, count))[count - 1].text

    async def close(self) -> None:
        await self.http.stop()
        await self.close_stack()


Factory = Callable[..., Awaitable[TwoPlatforms]]


@pytest.fixture
async def make_gateway(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram, slack: FakeSlack
) -> AsyncIterator[Factory]:
    opened: list[TwoPlatforms] = []

    async def build(**env: str) -> TwoPlatforms:
        platform = {
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
            "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "CHORUS_SLACK__API_URL": slack.api_url,
            "CHORUS_GATEWAY__HTTP__PORT": "0",
            "CHORUS_AUTH__ADMINS": f"telegram:{TG_ADMIN},slack:{SL_ADMIN}",
            "CHORUS_AUTH__ALLOWED_USERS": (
                f"telegram:{TG_ANN},telegram:{TG_BOB},slack:{SL_ANN},slack:{SL_BOB}"
            ),
        }
        quiet = {  # ending a session asks the LLM nothing: the scripted answers stay in order
            "CHORUS_SESSIONS__HANDOFF": "false",
            "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1000",
        }
        settings = chat_settings(chorus_home, server, platform, **{**quiet, **env})
        tg = TelegramAdapter(settings.telegram, poll_timeout=2.0)
        sl = SlackAdapter(settings.slack, start_backoff=0.05, start_wait=10.0)
        stack = await open_stack(settings, llm_sleep=_no_sleep, adapters=[tg, sl])
        http = HTTPServer("127.0.0.1", 0, metrics=stack.metrics, readiness=stack.readiness)
        for method, path, handler in sl.http_routes():
            http.add_route(method, path, handler)
        await stack.start()
        await http.start()
        gateway = TwoPlatforms(stack, http, telegram, slack, sl, server)
        opened.append(gateway)
        return gateway

    yield build
    for gateway in opened:
        await gateway.close()


def system_prompt(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])

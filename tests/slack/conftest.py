"""The whole gateway on Slack: real slack-bolt and slack_sdk, fake Web API, fake LLM.

Over HTTP, events and slash commands reach the gateway's own HTTP server (port 0)
signed like Slack signs them; with ``socket=True`` the gateway runs in Socket Mode
(an app-level token, no signing secret) and the fake sends envelopes over its
websocket. Runs on the real clock (the reply stream paces edits on it), so tests
keep their waits short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.adapters.slack import SlackAdapter
from gateway.app import GatewayStack, open_stack
from gateway.config import Settings
from gateway.ops import HTTPServer
from tests.fakes import FakeOpenAI
from tests.fakes.slack_api import APP_TOKEN, FakeSlack
from tests.fakes.slack_requests import (
    SIGNING_SECRET,
    action_payload,
    command_payload,
    event_callback,
    post_action,
    post_command,
    post_event,
)
from tests.platform_support import StackHandle, chat_settings

ADMIN = "UADMIN01"
ANN = "UANN0001"
BOB = "UBOB0001"
STRANGER = "USTRANGE"
DM_ANN = "DANN0001"
DM_BOB = "DBOB0001"
CHANNEL = "CGENERAL"


async def _no_sleep(_: float) -> None:
    return None


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


def slack_settings(home: Path, server: FakeOpenAI, slack: FakeSlack, **env: str) -> Settings:
    platform = {
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "CHORUS_SLACK__API_URL": slack.api_url,
        "CHORUS_AUTH__ADMINS": f"slack:{ADMIN}",
        "CHORUS_AUTH__ALLOWED_USERS": f"slack:{ANN},slack:{BOB}",
        "CHORUS_GATEWAY__HTTP__PORT": "0",
    }
    return chat_settings(home, server, platform, **env)


@dataclass
class SlackGateway(StackHandle):
    stack: GatewayStack
    adapter: SlackAdapter
    http: HTTPServer
    slack: FakeSlack
    server: FakeOpenAI

    @property
    def events_url(self) -> str:
        return self.http.url + self.adapter.events_path

    async def event(
        self, event: dict[str, Any], *, event_id: str | None = None, retry_num: int | None = None
    ) -> tuple[int, str]:
        """Deliver ``event`` as Slack would; returns the HTTP status and body."""
        payload = event_callback(event, event_id=event_id)
        return await post_event(self.events_url, payload, retry_num=retry_num)

    @property
    def commands_url(self) -> str:
        return self.http.url + self.adapter.commands_path

    async def command(
        self, text: str, *, user: str, channel: str, secret: str = SIGNING_SECRET
    ) -> tuple[int, str]:
        """``/chorus text`` as Slack posts it over HTTP; returns (status, response_url)."""
        url = self.slack.response_url()
        form = command_payload(text, user=user, channel=channel, response_url=url)
        status, _ = await post_command(self.commands_url, form, secret=secret)
        return status, url

    async def click(
        self,
        action_id: str,
        value: str,
        *,
        user: str,
        channel: str,
        block_id: str | None = None,
        message: dict[str, Any] | None = None,
    ) -> str:
        """A button click as Slack posts it over HTTP (to the events path); its response_url."""
        url = self.slack.response_url()
        payload = action_payload(
            action_id,
            value,
            user=user,
            channel=channel,
            response_url=url,
            block_id=block_id,
            message=message,
        )
        status, _ = await post_action(self.events_url, payload)
        assert status == 200
        return url

    async def close(self) -> None:
        await self.http.stop()
        await self.close_stack()


GatewayFactory = Callable[..., Awaitable[SlackGateway]]


@pytest.fixture
async def make_gateway(
    chorus_home: Path, server: FakeOpenAI, slack: FakeSlack
) -> AsyncIterator[GatewayFactory]:
    opened: list[SlackGateway] = []

    async def build(
        *, start_wait: float = 10.0, socket: bool = False, vision: bool = False, **env: str
    ) -> SlackGateway:
        if socket:
            env = {
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_SIGNING_SECRET": "",
                "CHORUS_SLACK__SOCKET_PING_INTERVAL": "0.2",
                **env,
            }
        settings = slack_settings(chorus_home, server, slack, **env)
        adapter = SlackAdapter(
            settings.slack, vision=vision, start_backoff=0.05, start_wait=start_wait
        )
        stack = await open_stack(settings, llm_sleep=_no_sleep, adapters=[adapter])
        http = HTTPServer("127.0.0.1", 0, metrics=stack.metrics, readiness=stack.readiness)
        for method, path, handler in adapter.http_routes():
            http.add_route(method, path, handler)
        await stack.start()
        await http.start()
        gateway = SlackGateway(stack, adapter, http, slack, server)
        opened.append(gateway)
        return gateway

    yield build
    for gateway in opened:
        await gateway.close()


def user_texts(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"]

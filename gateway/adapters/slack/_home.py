"""The app's Home tab: the person's ``/status`` and ``/help``, published when they open it.

Slack sends ``app_home_opened`` (``tab: home``) each time someone opens the tab; the
answers of ``/status`` (of their direct chat with the app) and ``/help`` go through
the one command dispatch, as that person, and ``views.publish`` shows them, spelled
the Slack way (``/chorus new``). Opening the tab again within ``REFRESH_AFTER``
seconds shows what was published then. The manifest turns the tab on
(``home_tab_enabled``) and subscribes to the event.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._support import SeenSet
from gateway.adapters.slack._client import error_code
from gateway.adapters.slack._events import PLATFORM
from gateway.adapters.slack._format import to_mrkdwn
from gateway.clock import Clock
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

REFRESH_AFTER = 10.0
"""Seconds within which opening the tab again publishes nothing new."""
SECTION_CHARS = 3000
MAX_BLOCKS = 100
PEOPLE = 10_000

Answer = Callable[[InboundMessage], Awaitable[str]]


def home_view(status: str, help_text: str) -> dict[str, Any]:
    """The Home tab: a header, the status, the commands (mrkdwn, split at Slack's limits)."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Your status"}},
        *_sections(status),
        {"type": "divider"},
        {"type": "header", "text": {"type": "plain_text", "text": "Commands"}},
        *_sections(help_text),
    ]
    return {"type": "home", "blocks": blocks[:MAX_BLOCKS]}


def _sections(text: str) -> list[dict[str, Any]]:
    shown = to_mrkdwn(text.strip()) or "—"
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": shown[i : i + SECTION_CHARS]}}
        for i in range(0, len(shown), SECTION_CHARS)
    ]


class AppHome:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        answer: Answer,
        spell: Callable[[str], str],
        clock: Clock,
    ) -> None:
        self._client = client
        self._answer = answer
        self._spell = spell
        self._recent = SeenSet(PEOPLE, ttl=REFRESH_AFTER, clock=clock)

    async def opened(self, event: Mapping[str, Any]) -> None:
        """``app_home_opened``: publish the person's Home tab (never raises)."""
        user, channel = event.get("user"), event.get("channel")
        if event.get("tab") != "home" or not isinstance(user, str) or not user:
            return
        if not self._recent.add(user):
            return
        chat = channel if isinstance(channel, str) and channel else user
        try:
            status = await self._answer(self._asking(user, chat, "/status"))
            help_text = await self._answer(self._asking(user, chat, "/help"))
            view = home_view(self._spell(status), self._spell(help_text))
            await self._client.views_publish(user_id=user, view=view)
        except SlackApiError as exc:
            logger.warning("slack: the Home tab was not published (%s)", error_code(exc))
        except (ClientError, TimeoutError, OSError) as exc:
            logger.warning("slack: the Home tab was not published (%s)", type(exc).__name__)

    @staticmethod
    def _asking(user: str, chat: str, text: str) -> InboundMessage:
        return InboundMessage(
            platform=PLATFORM,
            chat_id=chat,
            user_id=user,
            text=text,
            message_id="home",
            is_direct=True,
        )

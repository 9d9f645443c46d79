"""Events that are no message to answer: the Home tab opened, an assistant thread started.

Each is recorded in the inbox like any event (the middleware), settled at once, then
handled: ``app_home_opened`` publishes the Home tab (``_home``);
``assistant_thread_started`` (and ``assistant_thread_context_changed``) mark the thread
as an assistant thread, where the busy indicator is the thread's status (``_busy``).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from gateway.adapters._base import BaseAdapter
from gateway.adapters.slack._busy import BusyIndicator
from gateway.adapters.slack._home import AppHome
from gateway.adapters.slack._inbound import event_receipt

logger = logging.getLogger(__name__)

ASSISTANT_EVENTS = ("assistant_thread_started", "assistant_thread_context_changed")


def listen_to_surfaces(
    app: AsyncApp, adapter: BaseAdapter, *, home: AppHome, busy: BusyIndicator
) -> None:
    async def settle(body: dict[str, Any]) -> None:
        event_id = body.get("event_id")
        if isinstance(event_id, str) and event_id:
            await adapter.settled((event_receipt(event_id),))

    async def on_home(body: dict[str, Any], event: dict[str, Any]) -> None:
        await settle(body)
        await home.opened(event)

    async def on_assistant(body: dict[str, Any], event: dict[str, Any]) -> None:
        await settle(body)
        thread = event.get("assistant_thread")
        if not isinstance(thread, dict):
            return
        channel, ts = thread.get("channel_id"), thread.get("thread_ts")
        if isinstance(channel, str) and isinstance(ts, str) and channel and ts:
            busy.assistant_thread(channel, ts)
            logger.debug("slack: assistant thread %s in %s", ts, channel)

    app.event("app_home_opened")(on_home)
    for name in ASSISTANT_EVENTS:
        app.event(name)(on_assistant)

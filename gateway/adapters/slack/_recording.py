"""The bolt middleware (both modes) that records each event before it is acknowledged.

A delivery seen before is acknowledged and not handled again; while the gateway
shuts down (or the inbox refuses), events are refused (503, or no ack on the
socket) so Slack sends them again later. A slash command is never recorded: while
stopping it is told so, ephemeral.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from slack_bolt.response import BoltResponse

from gateway import _texts as gateway_texts
from gateway.adapters._base import BaseAdapter
from gateway.adapters.slack._inbound import event_receipt
from gateway.errors import InboxError

logger = logging.getLogger(__name__)


async def record_first(
    adapter: BaseAdapter,
    body: dict[str, Any],
    next: Callable[[], Awaitable[None]],
    *,
    paused: bool,
) -> BoltResponse | None:
    if "command" in body:
        if paused:
            answer = {"response_type": "ephemeral", "text": gateway_texts.SHUTTING_DOWN}
            return BoltResponse(status=200, body=answer)
        await next()
        return None
    if paused or not adapter.accepting():
        return BoltResponse(status=503, body={"error": "shutting down"})
    event_id = body.get("event_id") if body.get("type") == "event_callback" else None
    if isinstance(event_id, str) and event_id:
        try:  # the body as ASCII JSON: a lone surrogate in an event stays storable
            fresh = await adapter.record(event_receipt(event_id), json.dumps(body))
        except InboxError as exc:  # refused: Slack sends it again
            adapter.not_recorded(exc)
            later = dict[str, str | Sequence[str]](adapter.retry_later())
            return BoltResponse(status=503, body={"error": "unavailable"}, headers=later)
        if not fresh:
            logger.debug("slack: event %s is known; acknowledged, not handled again", event_id)
            return BoltResponse(status=200, body="")
    await next()
    return None

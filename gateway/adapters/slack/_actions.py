"""Buttons on command answers (Slack interactivity), in HTTP mode and Socket Mode.

The answer to ``/chorus admin memory pending`` lists each staged write to the
shared MEMORY.md with **Approve** and **Reject** buttons. A click reaches chorus
as a ``block_actions`` payload (HTTP: a form POST to the events or commands
path; Socket Mode: an ``interactive`` envelope); it is acknowledged at once and
runs as the command it stands for, ``/admin memory approve <id>``, through the
same dispatch, authorization and audit as a typed command: a non-admin's click
is refused and audited. The outcome is posted back, ephemeral, to the payload's
``response_url``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond

from gateway.adapters.slack._events import PLATFORM
from gateway.adapters.slack._format import to_mrkdwn
from gateway.adapters.slack._names import UserNames
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

REVIEW_ACTION = re.compile(r"^chorus_review_(approve|reject)$")
_STAGED_LINE = re.compile(r"^#(\d{1,12}) ")
REVIEW_LISTING = ("/admin", "memory", "pending")
MAX_BLOCKS = 50
SECTION_CHARS = 3000


def is_review_listing(command_text: str) -> bool:
    return tuple(command_text.split()[:3]) == REVIEW_LISTING


def review_blocks(text: str) -> list[dict[str, Any]] | None:
    """The listing as Block Kit, a button pair under each staged write; None if it has none."""
    blocks: list[dict[str, Any]] = []
    staged = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        shown = to_mrkdwn(line)[:SECTION_CHARS]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": shown}})
        found = _STAGED_LINE.match(line)
        if found is None:
            continue
        staged += 1
        staged_id = found.group(1)
        blocks.append(
            {
                "type": "actions",
                "block_id": f"chorus_review_{staged_id}",
                "elements": [
                    _button("Approve", "approve", staged_id, style="primary"),
                    _button("Reject", "reject", staged_id, style="danger"),
                ],
            }
        )
    if not staged or len(blocks) > MAX_BLOCKS:
        return None
    return blocks


def _button(label: str, verb: str, staged_id: str, *, style: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": f"chorus_review_{verb}",
        "text": {"type": "plain_text", "text": label},
        "value": staged_id,
        "style": style,
    }


def action_message(body: Mapping[str, Any], *, user_name: str = "") -> InboundMessage | None:
    """The command a review button stands for, or None when the payload is not one."""
    user = body.get("user")
    channel = body.get("channel")
    actions = body.get("actions")
    if not isinstance(user, dict) or not isinstance(actions, list) or not actions:
        return None
    user_id = user.get("id")
    channel_id = channel.get("id") if isinstance(channel, dict) else None
    if not channel_id:
        container = body.get("container")
        channel_id = container.get("channel_id") if isinstance(container, dict) else None
    action = actions[0]
    if not isinstance(user_id, str) or not isinstance(channel_id, str) or not user_id:
        return None
    if not isinstance(action, dict):
        return None
    verb = REVIEW_ACTION.match(str(action.get("action_id") or ""))
    value = str(action.get("value") or "")
    if verb is None or not value.isdigit():
        return None
    trigger = body.get("trigger_id")
    direct = channel_id.startswith("D")
    return InboundMessage(
        platform=PLATFORM,
        chat_id=channel_id,
        user_id=user_id,
        text=f"/admin memory {verb.group(1)} {value}",
        message_id=f"action:{trigger}" if isinstance(trigger, str) and trigger else "action",
        user_name=user_name or str(user.get("name") or ""),
        is_direct=direct,
        mentions_bot=not direct,
    )


async def answer_action(
    body: Mapping[str, Any],
    respond: AsyncRespond,
    *,
    answer: Callable[[InboundMessage], Awaitable[str]],
    names: UserNames,
) -> None:
    """Run the button's command and post its outcome, ephemeral, to its ``response_url``."""
    user = body.get("user")
    user_id = user.get("id") if isinstance(user, dict) else None
    name = await names.name(user_id) if isinstance(user_id, str) and user_id else ""
    message = action_message(body, user_name=name)
    if message is None:
        logger.warning("slack: a button click chorus does not know was ignored")
        return
    text = await answer(message)
    reply = await respond(text=to_mrkdwn(text), response_type="ephemeral", replace_original=False)
    if reply.status_code != 200:
        logger.warning("slack: answering a button failed (HTTP %s)", reply.status_code)

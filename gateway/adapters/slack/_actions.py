"""Buttons on command answers (Slack interactivity), in HTTP mode and Socket Mode.

The answer to ``/chorus admin memory pending`` (and ``… show <id>``) lists each
staged write to the shared MEMORY.md with **Approve** and **Reject** buttons. A click reaches chorus
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters.slack._events import PLATFORM
from gateway.adapters.slack._format import to_mrkdwn
from gateway.adapters.slack._names import UserNames
from gateway.adapters.slack._review_cards import (
    ReviewCards,
    block_id,
    card_of,
    decision,
    with_decision,
)
from gateway.events import InboundMessage, SentMessage

logger = logging.getLogger(__name__)

REVIEW_ACTION = re.compile(r"^chorus_review_(approve|reject)$")
CHOICE_ACTION = re.compile(r"^chorus_choice_\d{1,2}$")
"""A button of ``choice_blocks``: its value is the command it stands for."""
_STAGED_HEADER = re.compile(
    r"^#(\d{1,12}) (?:add|replace|remove) by \S+(?: in the shared profile of \S+)?"
    r"(?P<cut> \(cut\b.*)?:$"
)
"""A staged write's header line; its text follows on lines that start with ``_INDENT``."""
_INDENT = "  │ "
_ESCAPED = re.compile(r"\\([\\`*_~\[\]()<>|#!])")
"""The listing escapes a staged text's Markdown; plain text shows it as typed."""
REVIEW_LISTINGS = {("/admin", "memory", "pending"), ("/admin", "memory", "show")}
MAX_BLOCKS = 50
SECTION_CHARS = 3000


def is_review_listing(command_text: str) -> bool:
    return tuple(command_text.split()[:3]) in REVIEW_LISTINGS


def review_blocks(
    text: str, spell: Callable[[str], str] = lambda line: line, *, card: str = ""
) -> list[dict[str, Any]] | None:
    """The listing as Block Kit; None if it lists no staged write.

    Each staged write is one item: its header line and the ``_INDENT`` lines after it,
    shown as plain text (no markup, no links, no mentions), then its buttons, whose
    value is the id from the header. A write whose text the listing cut gets only
    **Reject**: it is approved after ``show <id>``, whose answer has the buttons.
    Other lines are the listing's own, in mrkdwn (``spell`` gives commands the
    workspace's spelling). ``card`` goes into each actions block's id (``_review_cards``).
    """
    blocks: list[dict[str, Any]] = []
    staged = 0
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        found = _STAGED_HEADER.match(line)
        if found is None:
            if line.strip():
                shown = to_mrkdwn(spell(line))[:SECTION_CHARS]
                blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": shown}})
            continue
        item = [spell(line)]
        while index < len(lines) and (lines[index].startswith(_INDENT) or not lines[index]):
            item.append(_ESCAPED.sub(r"\1", lines[index]))
            index += 1
        whole = "\n".join(item).rstrip()
        for start in range(0, len(whole), SECTION_CHARS):
            chunk = whole[start : start + SECTION_CHARS]
            blocks.append(
                {"type": "section", "text": {"type": "plain_text", "text": chunk, "emoji": False}}
            )
        staged += 1
        staged_id = found.group(1)
        elements = [_button("Reject", "reject", staged_id, style="danger")]
        if found.group("cut") is None:
            elements.insert(0, _button("Approve", "approve", staged_id, style="primary"))
        blocks.append(
            {"type": "actions", "block_id": block_id(staged_id, card), "elements": elements}
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


def choice_blocks(text: str, choices: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """``text`` as plain text (no markup, links or mentions) with a button per ``(label,
    command)``; a click is that command from whoever clicked."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "plain_text", "text": chunk, "emoji": False}}
        for chunk in (
            text[start : start + SECTION_CHARS] for start in range(0, len(text), SECTION_CHARS)
        )
    ][: MAX_BLOCKS - 1]
    elements = [
        {
            "type": "button",
            "action_id": f"chorus_choice_{index}",
            "text": {"type": "plain_text", "text": label},
            "value": command,
        }
        for index, (label, command) in enumerate(choices)
    ]
    if elements:
        blocks.append({"type": "actions", "elements": elements})
    return blocks


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
    action_id = str(action.get("action_id") or "")
    verb = REVIEW_ACTION.match(action_id)
    value = str(action.get("value") or "")
    if CHOICE_ACTION.match(action_id) and value.startswith("/"):
        text = value
    elif verb is not None and value.isdigit():
        text = f"/admin memory {verb.group(1)} {value}"
    else:
        return None
    trigger = body.get("trigger_id")
    direct = channel_id.startswith("D")
    return InboundMessage(
        platform=PLATFORM,
        chat_id=channel_id,
        user_id=user_id,
        text=text,
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
    cards: ReviewCards | None = None,
) -> None:
    """Run the button's command and post its outcome, ephemeral, to its ``response_url``;
    a review card's decided write shows the decision in place of its buttons."""
    user = body.get("user")
    user_id = user.get("id") if isinstance(user, dict) else None
    name = await names.name(user_id) if isinstance(user_id, str) and user_id else ""
    message = action_message(body, user_name=name)
    if message is None:
        logger.warning("slack: a button click chorus does not know was ignored")
        return
    text = await answer(message)
    if cards is not None and await _card_decided(body, respond, text, message.user_id, cards):
        return
    reply = await respond(text=to_mrkdwn(text), response_type="ephemeral", replace_original=False)
    if reply.status_code != 200:
        logger.warning("slack: answering a button failed (HTTP %s)", reply.status_code)


async def _card_decided(
    body: Mapping[str, Any], respond: AsyncRespond, text: str, user: str, cards: ReviewCards
) -> bool:
    """Replace the clicked review card's buttons with the decision ``text`` reports; False
    when it reports none or the card is not known (the outcome is then posted alone)."""
    action = body["actions"][0]
    staged_id = str(action.get("value") or "")
    if REVIEW_ACTION.match(str(action.get("action_id") or "")) is None:
        return False
    decided = decision(text, staged_id)
    card = card_of(action)
    blocks = cards.blocks(body, card)
    if decided is None or blocks is None:
        return False
    verb, line = decided
    updated = with_decision(blocks, str(action.get("block_id") or ""), verb, line, user)
    if not updated:
        return False
    reply = await respond(text=to_mrkdwn(text), blocks=updated, replace_original=True)
    if reply.status_code != 200:
        logger.warning("slack: replacing a review card failed (HTTP %s)", reply.status_code)
        return False
    cards.decided(card, updated)
    return True


async def close_card(client: AsyncWebClient, sent: SentMessage, text: str) -> None:
    """``chat.update``: the text as plain-text blocks, the buttons gone (it was decided)."""
    await client.chat_update(
        channel=sent.chat_id, ts=sent.message_id, text=text, blocks=choice_blocks(text, [])
    )

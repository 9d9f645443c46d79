"""A review card's buttons replaced by the decision once it is made.

The review listing (``/chorus admin memory pending`` or ``… show <id>``) is an
ephemeral answer with Approve / Reject buttons per staged write. When a click
decides a write (``#<id> approved``, ``rejected`` or ``failed``), that write's
buttons give way to the decision — what, by whom — and the rest of the card stays.
An ephemeral message is not one ``chat.update`` can reach, so the card is replaced
through the click's ``response_url`` (``replace_original``), as Slack has it for
messages of interactions. The card's blocks come with the click when Slack sends the
message along, else from the cards this process sent (by the card key in the
buttons' ``block_id``). A click that decided nothing (refused, already decided)
leaves the card and is answered on its own.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.adapters._support import RecentValues

CARDS = 500
CARD_TTL = 30 * 60.0
"""Seconds a card is remembered (Slack's ``response_url`` works for 30 minutes)."""
_ICONS = {"approved": ":white_check_mark:", "rejected": ":x:", "failed": ":warning:"}

Blocks = list[dict[str, Any]]


def new_card() -> str:
    return secrets.token_hex(4)


def block_id(staged_id: str, card: str) -> str:
    return f"chorus_review_{card}_{staged_id}" if card else f"chorus_review_{staged_id}"


def card_of(action: Mapping[str, Any]) -> str:
    """The card key in a clicked button's ``block_id`` ("" for none)."""
    rest = str(action.get("block_id") or "").removeprefix("chorus_review_")
    return rest.rpartition("_")[0]


def decision(answer: str, staged_id: str) -> tuple[str, str] | None:
    """``(verb, line)`` when ``answer`` says the write was decided; None otherwise."""
    found = re.search(rf"^#{re.escape(staged_id)} (approved|rejected|failed)\b.*$", answer, re.M)
    return (found.group(1), found.group(0)) if found else None


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def with_decision(blocks: Sequence[Any], block: str, verb: str, line: str, user: str) -> Blocks:
    """``blocks`` with the buttons of ``block`` replaced by the decision; [] when the card
    has no such buttons."""
    shown = f"{_ICONS.get(verb, '')} {_escaped(line)} (by <@{user}>)".strip()
    decided = {"type": "context", "elements": [{"type": "mrkdwn", "text": shown}]}
    found = False
    out: Blocks = []
    for item in blocks:
        if not isinstance(item, dict):
            return []
        if item.get("type") == "actions" and item.get("block_id") == block:
            out.append(decided)
            found = True
        else:
            out.append(item)
    return out if found else []


class ReviewCards:
    """The review cards sent lately, by card key: their blocks as they stand now."""

    def __init__(self) -> None:
        self._cards: RecentValues[Blocks] = RecentValues(CARDS, ttl=CARD_TTL)

    def sent(self, card: str, blocks: Blocks) -> None:
        self._cards.put(card, blocks)

    def blocks(self, body: Mapping[str, Any], card: str) -> Blocks | None:
        """The card clicked on: as the click carries it, or as it was sent."""
        message = body.get("message")
        if isinstance(message, dict) and isinstance(message.get("blocks"), list):
            return list(message["blocks"])
        return self._cards.get(card) if card else None

    def decided(self, card: str, blocks: Blocks) -> None:
        if card:
            self._cards.put(card, blocks)

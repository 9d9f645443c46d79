"""Reads over several peers: a linked person's own and those of the accounts linked into it.

Honcho cannot move what it concluded about one peer to another, so after ``/link``
the person's recall, card and search read the peers of its accounts too
(``account_keys``); every write stays on the person's own peer.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from plugins.memory._kit import Guard

from ._client import HonchoClient
from ._recall import format_recall

RECALL_CONCLUSIONS = 10
"""Conclusions of the representation fetched for the recall, per peer."""


def recall(client: HonchoClient, guard: Guard, peers: list[str], query: str, *, live: bool) -> str:
    """The card and representation of each of ``peers``, as one recall text."""
    representations: list[str] = []
    cards: list[str] = []
    for peer in peers:
        call = partial(client.peer_context, peer, query, RECALL_CONCLUSIONS, live=live)
        representation, card = guard.run("recall", call)
        representations.append(representation.strip())
        cards += card
    return format_recall("\n\n".join(r for r in representations if r), cards)


def cards(client: HonchoClient, guard: Guard, peers: list[str]) -> list[str]:
    """The facts of each peer card of ``peers``, in turn."""
    return [fact for peer in peers for fact in guard.run("get card", partial(client.card, peer))]


def search(
    client: HonchoClient, guard: Guard, peers: list[str], query: str, limit: int
) -> list[dict[str, Any]]:
    """The conclusions matching ``query`` of each peer's own view (``limit`` per peer)."""
    mine: list[dict[str, Any]] = []
    for peer in peers:
        found = guard.run("search", partial(client.search, peer, query, limit))
        mine += [c.public() for c in found if c.observer_id == c.observed_id == peer][:limit]
    return mine

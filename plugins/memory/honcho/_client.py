"""What the provider asks of Honcho, through the honcho-ai SDK, as plain values.

Two SDK clients share one ``httpx.Client``: ``recall`` for the context fetched
before a turn (at most :data:`RECALL_TIMEOUT` seconds, no retry: the turn does
not wait for it anyway) and ``main`` for everything else (``timeout`` per try;
in the background jobs the SDK's own retries with backoff, on the request path
none, so a tool answers within one ``timeout``). Nothing here touches the
network when it is built; the SDK creates the workspace on the first call.

Peers and sessions are addressed by id without a get-or-create round trip
(``Peer(id, client)``); :meth:`HonchoClient.open_session` creates the session
once per instance with its members' settings: the assistant peer is never
observed, so Honcho models the people and not the bot. Every conclusion call
is on the user's own view (observer and observed both the user's peer).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx

from ._config import ASSISTANT_PEER, Settings

RECALL_TIMEOUT = 5.0
"""Seconds the recall before a turn may take at most (less when ``timeout`` is less)."""
BACKGROUND_RETRIES = 2
TURN_KEY = "chorus_turn"
"""Message metadata naming the turn a message came from (a re-delivered turn is skipped)."""


@dataclass(frozen=True)
class Conclusion:
    id: str
    content: str
    observer_id: str
    observed_id: str
    created_at: str

    def public(self) -> dict[str, str]:
        return {"id": self.id, "conclusion": self.content, "created_at": self.created_at}


@dataclass(frozen=True)
class SessionSnapshot:
    summary: str
    representation: str
    card: list[str]
    messages: list[tuple[str, str]]
    """``(peer id, content)`` of the session's latest messages, oldest first."""


def _conclusion(item: Any) -> Conclusion:
    return Conclusion(
        id=str(item.id),
        content=str(item.content),
        observer_id=str(item.observer_id),
        observed_id=str(item.observed_id),
        created_at=item.created_at.isoformat() if item.created_at is not None else "",
    )


class HonchoClient:
    def __init__(self, sdk: ModuleType, settings: Settings, *, background: bool) -> None:
        self._sdk = sdk
        self._http = httpx.Client(timeout=settings.timeout)
        common: dict[str, Any] = {
            "base_url": settings.base_url,
            "api_key": settings.api_key or None,
            "workspace_id": settings.workspace_id,
            "http_client": self._http,
        }
        self.main = sdk.Honcho(
            timeout=settings.timeout,
            max_retries=BACKGROUND_RETRIES if background else 0,
            **common,
        )
        self.recall = sdk.Honcho(
            timeout=min(settings.timeout, RECALL_TIMEOUT), max_retries=0, **common
        )
        self._opened: set[str] = set()
        self._lock = threading.Lock()

    def close(self) -> None:
        self._http.close()

    def _peer(self, peer_id: str, *, recall: bool = False) -> Any:
        return self._sdk.Peer(peer_id, self.recall if recall else self.main)

    def _session(self, session_id: str) -> Any:
        return self._sdk.Session(session_id, self.main)

    # -- what Honcho knows of a person ---------------------------------------

    def peer_context(
        self, peer_id: str, query: str, limit: int, *, live: bool
    ) -> tuple[str, list[str]]:
        """The peer's representation around ``query`` and their card.

        ``live``: the recall a turn waits for, through the ``recall`` client.
        """
        context = self._peer(peer_id, recall=live).context(
            search_query=query or None, search_top_k=limit, max_conclusions=limit
        )
        return context.representation or "", list(context.peer_card or [])

    def card(self, peer_id: str) -> list[str]:
        return list(self._peer(peer_id).get_card() or [])

    def set_card(self, peer_id: str, card: list[str]) -> list[str]:
        return list(self._peer(peer_id).set_card(card) or [])

    def ask(
        self, peer_id: str, query: str, reasoning_level: str | None, *, live: bool = False
    ) -> str:
        """Honcho's dialectic answer to ``query`` about the peer; ``""`` when it has none.

        ``live``: the supplement a turn waits for, through the ``recall`` client.
        """
        answer = self._peer(peer_id, recall=live).chat(query, reasoning_level=reasoning_level)
        return str(answer) if answer else ""

    # -- conclusions (the peer's own view) -----------------------------------

    def conclude(self, peer_id: str, content: str) -> Conclusion:
        return _conclusion(self._peer(peer_id).conclusions.create([{"content": content}])[0])

    def search(self, peer_id: str, query: str, limit: int) -> list[Conclusion]:
        found = self._peer(peer_id).conclusions.query(query, top_k=limit)
        return [_conclusion(item) for item in found]

    def owned_conclusion(self, peer_id: str, conclusion_id: str) -> Conclusion | None:
        """The peer's conclusion ``conclusion_id``; None when it is missing or not theirs."""
        try:
            found = _conclusion(self._peer(peer_id).conclusions.get(conclusion_id))
        except self._sdk.NotFoundError:
            return None
        return found if found.observer_id == found.observed_id == peer_id else None

    def own_conclusions(self, peer_id: str) -> list[Conclusion]:
        """Every conclusion of the peer's own view (every page)."""
        found = [_conclusion(c) for c in self._peer(peer_id).conclusions.list(size=100)]
        return [c for c in found if c.observer_id == c.observed_id == peer_id]

    def forget(self, peer_id: str, conclusion_id: str) -> None:
        self._peer(peer_id).conclusions.delete(conclusion_id)

    # -- sessions ------------------------------------------------------------

    def open_session(self, session_id: str, member: str) -> None:
        """Create the session (once per instance) with ``member`` and the unobserved assistant."""
        with self._lock:
            if session_id in self._opened:
                return
        sdk = self._sdk
        self.main.peer(ASSISTANT_PEER, configuration=sdk.api_types.PeerConfig(observe_me=False))
        unobserved = sdk.api_types.SessionPeerConfig(observe_me=False, observe_others=False)
        self.main.session(
            session_id,
            metadata={"source": "chorus"},
            peers=[member, (ASSISTANT_PEER, unobserved)],
        )
        with self._lock:
            self._opened.add(session_id)

    def has_turn(self, session_id: str, turn: str) -> bool:
        """Whether the session holds a message of ``turn`` (checked on the answer too)."""
        page = self._session(session_id).messages(filters={"metadata": {TURN_KEY: turn}}, size=1)
        return any(message.metadata.get(TURN_KEY) == turn for message in page.items)

    def add_turn(self, session_id: str, turn: str, parts: list[tuple[str, str]]) -> None:
        """Add ``(peer id, content)`` parts (at most 100) as one request, all tagged ``turn``."""
        params = self._sdk.MessageCreateParams
        self._session(session_id).add_messages(
            [params(peer_id=peer, content=text, metadata={TURN_KEY: turn}) for peer, text in parts]
        )

    def snapshot(self, session_id: str, peer_id: str, query: str, tokens: int) -> SessionSnapshot:
        context = self._session(session_id).context(
            summary=True, tokens=tokens, peer_target=peer_id, search_query=query or None
        )
        summary = context.summary.content if context.summary is not None else ""
        return SessionSnapshot(
            summary=summary,
            representation=context.peer_representation or "",
            card=list(context.peer_card or []),
            messages=[(m.peer_id, m.content) for m in context.messages],
        )

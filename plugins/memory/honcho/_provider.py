"""The Honcho memory provider: peer cards, representations and dialectic Q&A per person.

Who is who: the chorus user key is the Honcho peer (``telegram:42`` is the peer
``telegram_3a42``, see :mod:`._config`), the speaker's key in a group session
(``sessions.scope: chat``), else the session's; the assistant is the one peer
:data:`~._config.ASSISTANT_PEER`, never observed. One chorus session is one
Honcho session. Every read and write names the peer of the person talking:
tools take no peer, conclusions are created, searched and deleted only on that
peer's own view, and a conclusion is deleted only after it was fetched and
found to be theirs.

``recall_mode`` (``hybrid`` by default): ``hybrid`` injects recall before each
turn and offers the five tools, ``context`` only injects, ``tools`` only offers
the tools.

The injected recall is the person's context (card and representation) and a
dialectic supplement (Honcho's answer to the message about them), each one call
that the cost throttles (:mod:`._config`, :mod:`._throttle`) space out.

Calls by context (see :mod:`memory.providers`): ``sync_turn`` (``"background"``)
adds the turn as session messages, each text in parts of at most
:data:`MAX_MESSAGE_CHARS` characters, all in one request tagged with the turn's
hash, after checking the session holds no message with that tag (a re-delivered
job adds nothing). ``prefetch`` asks Honcho for the person's card and their
representation around the message (at most ``RECALL_TIMEOUT`` seconds); while
Honcho fails or is paused it answers with the recall ``queue_prefetch`` warmed
after the last turn. ``on_memory_write`` of the built-in tool's ``user`` target
becomes a conclusion about the session's user. The ``"flush"`` instance is
silent: chorus wrote its prompt, so nothing it does (no USER.md write, no tool)
reaches Honcho, and it injects nothing. Honcho cannot delete a message,
so a turn withdrawn by ``/undo`` after its sync stays in Honcho.

Logs carry no message, query or memory text above DEBUG.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context
from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import (
    BadConfig,
    Guard,
    NotReady,
    ProviderUnavailable,
    RemoteProvider,
    Session,
    erase_user_dir,
)

from . import _config, _deps, _linked, _tools
from ._client import HonchoClient
from ._guard import make_guard
from ._recall import WarmRecall, format_recall_with
from ._throttle import Throttle

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 25_000
"""Longest message Honcho accepts; a longer text is sent in parts."""
MAX_PARTS = 50
"""Parts kept of one text (1.25 M characters), so a turn is always one request of <= 100."""
CONTEXT_TOKENS = 2000

_KNOWS = "You have a long-term memory of each person (Honcho)"
_ARRIVES = ": what it knows of them arrives with their message."
_BLOCKS = {
    "hybrid": _KNOWS + _ARRIVES + " {tools}",
    "context": _KNOWS + _ARRIVES,
    "tools": _KNOWS + ". {tools}",
}
_TOOLS_TEXT = (
    "honcho_profile reads or corrects their peer card; honcho_search finds what Honcho "
    "concluded about them; honcho_context shows this conversation as Honcho holds it; "
    "honcho_reasoning asks Honcho a question about them (slower); honcho_conclude records "
    "a durable fact or deletes a wrong one by its id."
)


def parts_of(text: str) -> list[str]:
    """``text`` in parts of at most :data:`MAX_MESSAGE_CHARS`, at most :data:`MAX_PARTS`."""
    cut = [text[i : i + MAX_MESSAGE_CHARS] for i in range(0, len(text), MAX_MESSAGE_CHARS)]
    if len(cut) > MAX_PARTS:
        logger.info("honcho: a text of %d characters is cut to %d parts", len(text), MAX_PARTS)
    return cut[:MAX_PARTS]


def turn_hash(session: str, peer: str, user: str, assistant: str) -> str:
    """A stable name for one turn of one session, said by ``peer``."""
    data = json.dumps([session, peer, user, assistant], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]


class HonchoProvider(RemoteProvider):
    """Honcho (``pip install 'chorus[honcho]'``), hosted or self-hosted.

    ``clock``, ``failure_threshold`` and ``cooldown`` set the circuit breaker;
    ``environ`` replaces ``os.environ`` as the fallback for ``api_key``.
    """

    provider_name = _config.PROVIDER_NAME
    dependency = _deps
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS
    label = "Honcho"
    backend_label = "Honcho"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._settings = _config.Settings()
        self._client: HonchoClient | None = None
        self._throttle = Throttle(self._settings)

    def make_guard(self, breaker: CircuitBreaker) -> Guard:
        return make_guard(breaker)

    @property
    def settings(self) -> _config.Settings:
        return self._settings

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        session = Session.of(session_id, kwargs)
        settings = _config.parse(kwargs.get("config"), self._environ)
        if not settings.api_key and settings.base_url == _config.DEFAULT_BASE_URL:
            raise BadConfig("the hosted Honcho needs an API key: set HONCHO_API_KEY")
        context = session.context
        client = HonchoClient(_deps.load(), settings, background=context == "background")
        with self._lock:
            self._close()
            self.start_session(session)
            self._settings, self._client = settings, client
            self._throttle = Throttle(settings)
        logger.debug(
            "honcho provider ready for session %s (%s, %s)",
            session_id,
            context,
            settings.recall_mode,
        )

    # -- plumbing ------------------------------------------------------------

    def is_ready(self) -> bool:
        return self._home is not None and self._client is not None

    def _ready(self) -> tuple[Path, HonchoClient]:
        with self._lock:
            if self._home is None or self._client is None:
                raise NotReady("the honcho provider is not initialised")
            return self._home, self._client

    def _honcho_session(self, session_id: str = "") -> str:
        return _config.honcho_name(session_id or self._session_id)

    def _warm(self, user_key: str) -> WarmRecall:
        home, _ = self._ready()
        return WarmRecall(provider_dir(home, _config.PROVIDER_NAME, user_key))

    def _recall(self, query: str, user_keys: list[str], *, live: bool) -> str:
        _, client = self._ready()
        peers = [_config.honcho_name(key) for key in user_keys]
        return _linked.recall(client, self.guard, peers, query, live=live)

    # -- recall --------------------------------------------------------------

    @property
    def _silent(self) -> bool:
        """The flush instance: chorus's own prompt, never the person's words."""
        return self.skips_turns()

    def system_prompt_block(self) -> str:
        if self._silent:
            return ""
        return _BLOCKS[self._settings.recall_mode].format(tools=_TOOLS_TEXT)

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        self._throttle.turn_started(turn_number)

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        if not self._settings.injects or self._silent:
            return ""
        throttle = self._throttle
        turn = throttle.next_turn()
        if turn is None:
            return ""
        keys = self.recall_keys(speaker)
        key = keys[0]
        text = strip_memory_context(query).strip()
        recalled = throttle.cached_context(turn)
        if recalled is None:
            try:
                recalled = self._recall(text, keys, live=True)
            except ProviderUnavailable:
                logger.debug("honcho prefetch: Honcho unavailable, using the warm recall")
                recalled = self._warm(key).load()
            else:
                throttle.fetched_context(turn, recalled)
        supplement = self._supplement(text, key) if text and throttle.dialectic_due(turn) else ""
        logger.debug("honcho prefetch for %s: %d characters", loggable(text), len(recalled))
        return format_recall_with(recalled, supplement)

    def _supplement(self, text: str, user_key: str) -> str:
        """Honcho's dialectic answer to the message about the person (``""`` on failure)."""
        _, client = self._ready()
        peer = _config.honcho_name(user_key)
        level = self._settings.capped(None)
        call = partial(client.ask, peer, text[: _tools.MAX_QUERY], level, live=True)
        try:
            return str(self.guard.run("dialectic", call))
        except ProviderUnavailable:
            logger.debug("honcho prefetch: no dialectic supplement, Honcho unavailable")
            return ""

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        if not self._settings.injects or self._silent or not self._throttle.warm_due():
            return
        keys = self.recall_keys(speaker)
        text = strip_memory_context(query).strip()
        try:
            recalled = self._recall(text, keys, live=False)
        except ProviderUnavailable:
            return
        self._warm(keys[0]).store(recalled)

    # -- write ---------------------------------------------------------------

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
        speaker: str | None = None,
    ) -> None:
        prepared = self.turn(user_content, assistant_content, session_id, speaker)
        if prepared is None:
            return
        user, assistant = prepared.user, prepared.assistant
        _, client = self._ready()
        peer = _config.honcho_name(prepared.owner)
        session = self._honcho_session(session_id)
        turn = turn_hash(session, peer, user, assistant)
        parts = [(peer, p) for p in parts_of(user)]
        parts += [(_config.ASSISTANT_PEER, p) for p in parts_of(assistant)]
        self.guard.run("open session", partial(client.open_session, session, peer))
        if self.guard.run("check turn", partial(client.has_turn, session, turn)):
            logger.debug("honcho sync_turn of session %s: turn already synced", session)
            return
        self.guard.run("add messages", partial(client.add_turn, session, turn, parts))
        logger.debug("honcho sync_turn of session %s: %d messages", session, len(parts))

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """A fact the built-in tool wrote to USER.md becomes a conclusion about that user."""
        meta = metadata or {}
        if self._silent or "flush" in (meta.get("agent_context"), meta.get("origin")):
            logger.debug("honcho: a write from the flush is not a conclusion")
            return
        if target != "user" or action not in ("add", "replace"):
            return
        text = strip_memory_context(content or "").strip()[: _tools.MAX_CONCLUSION]
        if not text:
            return
        _, client = self._ready()
        peer = _config.honcho_name(self._user_key)
        self.guard.run("conclude", partial(client.conclude, peer, text))

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        if self.follow_reset(new_session_id, reset):
            return
        if rewound and kwargs.get("withdrawn_turn"):
            logger.debug("honcho cannot delete messages: the withdrawn turn stays in Honcho")

    # -- tools ---------------------------------------------------------------

    def offers_tools(self) -> bool:
        return self._settings.has_tools and not self._silent

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        peers = [_config.honcho_name(key) for key in self.recall_keys(call.get("speaker"))]
        return self._run_tool(tool_name, args, peers, str(call.get("session_id") or ""))

    def _run_tool(
        self, name: str, args: dict[str, Any], peers: list[str], session_id: str
    ) -> dict[str, Any]:
        """One tool on the owner's peer (``peers[0]``); reading the card and searching
        reach the other peers too (a linked person's accounts)."""
        _, client = self._ready()
        run, peer = self.guard.run, peers[0]
        if name == _tools.HONCHO_PROFILE:
            card = _tools.card_arg(args)
            if card is None:
                facts = _linked.cards(client, self.guard, peers)
                hint = "" if facts else "no card yet: Honcho writes one as it gets to know them"
                return {"card": facts, **({"hint": hint} if hint else {})}
            return {"card": run("set card", partial(client.set_card, peer, card)), "updated": True}
        if name == _tools.HONCHO_SEARCH:
            query, limit = _tools.query_arg(args), _tools.limit_arg(args)
            mine = _linked.search(client, self.guard, peers, query, limit)
            return {"results": mine, "count": len(mine)}
        if name == _tools.HONCHO_REASONING:
            query = _tools.query_arg(args)
            level = self._settings.capped(_tools.level_arg(args))
            answer = run("dialectic", partial(client.ask, peer, query, level))
            return {"answer": answer or None}
        if name == _tools.HONCHO_CONTEXT:
            return self._snapshot(client, peer, _tools.query_arg(args, required=False), session_id)
        conclusion, delete_id = _tools.conclude_args(args)
        if conclusion is not None:
            made = run("conclude", partial(client.conclude, peer, conclusion))
            return {"id": made.id, "conclusion": made.content}
        assert delete_id is not None
        if run("get conclusion", partial(client.owned_conclusion, peer, delete_id)) is None:
            raise _tools.ToolError(f"no conclusion with id {delete_id} belongs to this person")
        run("delete conclusion", partial(client.forget, peer, delete_id))
        return {"id": delete_id, "deleted": True}

    def _snapshot(
        self, client: HonchoClient, peer: str, query: str, session_id: str
    ) -> dict[str, Any]:
        session = self._honcho_session(session_id)
        self.guard.run("open session", partial(client.open_session, session, peer))
        call = partial(client.snapshot, session, peer, query, CONTEXT_TOKENS)
        snap = self.guard.run("session context", call)
        return _tools.snapshot_result(snap, peer)

    # -- teardown and configuration ------------------------------------------

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """The person's peer card and the conclusions of their own view."""
        _, client = self._ready()
        peer = _config.honcho_name(user_id)
        card = self.guard.run("get card", partial(client.card, peer))
        found = self.guard.run("list", partial(client.own_conclusions, peer))
        return {
            "peer": peer,
            "card": card,
            "memories": [
                {"id": c.id, "text": c.content, "created_at": c.created_at} for c in found
            ],
        }

    def forget_user(self, user_id: str) -> ForgetResult:
        """Delete what Honcho lets us delete; say what stays (it has no delete of the rest).

        Honcho deletes conclusions one by one and lets the card be emptied, but
        has no way to delete a peer or the messages it was sent, from which it
        derives its representation again.
        """
        home, client = self._ready()
        peer = _config.honcho_name(user_id)
        found = self.guard.run("list", partial(client.own_conclusions, peer))
        for conclusion in found:
            self.guard.run("forget", partial(client.forget, peer, conclusion.id))
        self.guard.run("set card", partial(client.set_card, peer, []))
        erase_user_dir(home, _config.PROVIDER_NAME, user_id)
        return ForgetResult(
            erased=False,
            reason=(
                "Honcho has no delete for a person or their messages: their conclusions and "
                "card were deleted, the messages they sent stay in Honcho"
            ),
            removed=len(found),
        )

    def _close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def shutdown(self) -> None:
        with self._lock:
            self._close()

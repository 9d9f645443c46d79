"""``PairingDesk``: admins are told of a stranger's pairing request, and decide it.

When a stranger is given a pairing code, ``announce`` opens a request
(``gateway.access.PairingRequests``, at most one per person an hour) and sends
every admin on the stranger's platform — or, when there is none there, every
admin on the other platforms — a direct message: who asks (name and platform
id), their code, and **Approve** / **Deny** buttons where the platform has them.
Each button stands for a typed command, ``/admin approve #ID`` or
``/admin deny #ID``, which goes through the one command dispatch: admins only,
audited. Approving allows the person by their newest valid code, as
``/admin approve CODE`` does; denying puts them on the deny list, as
``/admin deny platform:id`` does. The first decision wins; a later press is
told the request was already decided. Every card is then updated with the
decision where the platform lets a message be edited (its buttons go).

The approved person is told "You're in"; a denied person is told once,
politely, that the request was declined. Deciding someone any other way
(``/admin approve CODE``, ``/admin allow``, ``/admin deny``) settles their
pending requests the same way. Requests and cards are in the database, so
buttons and card updates work after a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Protocol

from gateway.access import (
    AdminReply,
    PairingCard,
    PairingRequest,
    PairingRequests,
    RequestStatus,
)
from gateway.adapters import BaseAdapter
from gateway.clock import Clock
from gateway.commands import _pairing_texts as t
from gateway.config import Settings
from gateway.events import InboundMessage, OutboundMessage, SentMessage

__all__ = ["ANNOUNCE_WINDOW", "PairingDesk"]

logger = logging.getLogger(__name__)

ANNOUNCE_WINDOW = 3600.0
"""Seconds within which admins are told of one person's pairing request at most once."""
NAME_CHARS = 64
CONSOLE = "console"


class Access(Protocol):
    """What the desk needs of ``gateway.access.Authorizer``."""

    def approve_pending(self, user_key: str, by: str) -> AdminReply: ...

    def deny(self, user_key: str, by: str) -> AdminReply: ...


class PairingDesk:
    def __init__(
        self,
        requests: PairingRequests,
        access: Access,
        settings: Callable[[], Settings],
        clock: Clock,
        adapters: Mapping[str, BaseAdapter],
    ) -> None:
        self.requests = requests
        self._access = access
        self._settings = settings
        self._clock = clock
        self._adapters = adapters

    # ------------------------------------------------------------------ telling

    async def announce(self, msg: InboundMessage, code: str) -> None:
        """Tell the admins that the sender of ``msg`` was given ``code``. Never raises."""
        try:
            await self._announce(msg, code)
        except Exception:
            logger.exception("admins could not be told of a pairing request")

    async def _announce(self, msg: InboundMessage, code: str) -> None:
        key = str(msg.user_key)
        request = await asyncio.to_thread(
            self.requests.open,
            key,
            _name(msg.user_name),
            msg.platform,
            msg.chat_id,
            self._clock.time(),
            ANNOUNCE_WINDOW,
        )
        if request is None:
            logger.info("pairing request of %s: the admins were told within the hour", key)
            return
        text = t.CARD.format(id=request.id, who=_who(request), code=code)
        choices = [
            (t.APPROVE, f"/admin approve #{request.id}"),
            (t.DENY, f"/admin deny #{request.id}"),
        ]
        told = 0
        for platform, admin_id in self._admins(msg.platform):
            adapter = self._adapters[platform]
            try:
                sent = await adapter.send_choice_privately(admin_id, text, choices)
            except Exception as exc:  # one admin out of reach: the others may still be told
                logger.warning(
                    "pairing request %s: an admin on %s could not be told (%s)",
                    request.id,
                    platform,
                    type(exc).__name__,
                )
                continue
            told += 1
            if sent is not None:
                card = PairingCard(platform, sent.chat_id, sent.message_id)
                await asyncio.to_thread(self.requests.add_card, request.id, card)
        logger.info("pairing request %s of %s: %d admin(s) told", request.id, key, told)

    def _admins(self, platform: str) -> list[tuple[str, str]]:
        """``(platform, id)`` of the admins on ``platform``; when none, of every admin
        on another platform this gateway runs (never the local console)."""
        admins = []
        for entry in self._settings().auth.admins:
            where, _, user_id = entry.partition(":")
            where = where.strip().lower()
            if user_id and where != CONSOLE and where in self._adapters:
                admins.append((where, user_id.strip()))
        here = [admin for admin in admins if admin[0] == platform]
        return here or admins

    # ----------------------------------------------------------------- deciding

    async def approve(self, ref: str, by: str) -> AdminReply:
        """``/admin approve #ID``: allow the person of a pending request."""
        request, refused = await self._claim(ref, "approve", "approved", by)
        if request is None:
            return refused
        reply = await asyncio.to_thread(self._access.approve_pending, request.user_key, by)
        if not reply.ok:  # their code expired meanwhile: the request ends with it
            now = self._clock.time()
            await asyncio.to_thread(
                self.requests.decide, request.id, "expired", None, now, force=True
            )
            await self._update_cards([_as(request, "expired", None)])
            return reply
        await self.settled(request.user_key, "approved", by, first=request)
        return AdminReply(
            t.APPROVED.format(key=request.user_key, id=request.id),
            ok=True,
            subject=request.user_key,
        )

    async def deny(self, ref: str, by: str) -> AdminReply:
        """``/admin deny #ID``: put the person of a pending request on the deny list."""
        request, refused = await self._claim(ref, "deny", "denied", by)
        if request is None:
            return refused
        reply = await asyncio.to_thread(self._access.deny, request.user_key, by)
        if not reply.ok:
            return reply
        await self.settled(request.user_key, "denied", by, first=request)
        return AdminReply(
            t.DENIED.format(key=request.user_key, id=request.id), ok=True, subject=request.user_key
        )

    async def _claim(
        self, ref: str, verb: str, status: RequestStatus, by: str
    ) -> tuple[PairingRequest | None, AdminReply]:
        """The request ``ref`` names, now decided ``status`` by ``by``; else None and why."""
        ask_id = ref.strip().lstrip("#").lower()
        if not ask_id or not ask_id.isalnum():
            return None, AdminReply(t.USAGE.format(verb=verb), ok=False, outcome="usage")
        shown = ask_id[:20]
        request = await asyncio.to_thread(self.requests.get, ask_id)
        if request is None:
            return None, AdminReply(t.NO_SUCH.format(id=shown), ok=False, outcome="not_found")
        now = self._clock.time()
        if request.status == "pending" and await asyncio.to_thread(
            self.requests.decide, ask_id, status, by, now
        ):
            return _as(request, status, by), AdminReply("", ok=True)
        current = await asyncio.to_thread(self.requests.get, ask_id) or request
        text = t.ALREADY.format(id=current.id, outcome=_outcome(current))
        logger.info("pairing request %s was already decided; %s changed nothing", ask_id, by)
        return None, AdminReply(text, ok=False, subject=current.user_key, outcome="already")

    async def settled(
        self, user_key: str, status: RequestStatus, by: str, *, first: PairingRequest | None = None
    ) -> None:
        """``user_key`` was approved or denied (``status``): their pending requests are
        decided so, the person is told, and the admins' cards show it. Never raises."""
        try:
            now = self._clock.time()
            others = await asyncio.to_thread(
                self.requests.settle_user,
                user_key,
                status,
                by,
                now,
            )
            decided = ([first] if first is not None else []) + others
            if not decided:
                return
            newest = max(decided, key=lambda r: r.created_at)
            await self._tell(newest, t.YOU_ARE_IN if status == "approved" else t.DECLINED)
            await self._update_cards(decided)
        except Exception:
            logger.exception("the pairing requests of a decided person could not be settled")

    async def _tell(self, request: PairingRequest, text: str) -> None:
        adapter = self._adapters.get(request.platform)
        if adapter is None:
            logger.warning(
                "pairing request %s: no %s adapter to tell", request.id, request.platform
            )
            return
        try:
            await adapter.send(OutboundMessage(request.platform, request.chat_id, text))
        except Exception as exc:
            logger.warning(
                "pairing request %s: its person could not be told (%s)",
                request.id,
                type(exc).__name__,
            )

    async def _update_cards(self, decided: list[PairingRequest]) -> None:
        for request in decided:
            text = t.CARD_DECIDED.format(
                id=request.id, who=_who(request), outcome=_outcome(request)
            )
            for card in await asyncio.to_thread(self.requests.cards, request.id):
                adapter = self._adapters.get(card.platform)
                if adapter is None:
                    continue
                try:
                    await adapter.close_choice(SentMessage(card.chat_id, card.message_id), text)
                except Exception as exc:
                    logger.info(
                        "pairing request %s: a card was not updated (%s)",
                        request.id,
                        type(exc).__name__,
                    )


def _as(request: PairingRequest, status: RequestStatus, by: str | None) -> PairingRequest:
    return replace(request, status=status, decided_by=by)


def _name(name: str) -> str:
    """A display name fit for a card: one line, no control characters, not too long."""
    kept = "".join(ch if ch.isprintable() else " " for ch in name).strip()
    return kept[:NAME_CHARS]


def _who(request: PairingRequest) -> str:
    if not request.user_name:
        return request.user_key
    return t.WHO.format(name=request.user_name, key=request.user_key)


def _outcome(request: PairingRequest) -> str:
    template = t.OUTCOMES.get(request.status, request.status)
    return template.format(by=request.decided_by or "someone")

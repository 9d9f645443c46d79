"""Several replicas: a deleted or edited message goes to the replica that owns its session.

A platform may deliver a person's deletion or edit (Slack's ``message_deleted`` and
``message_changed``) to any replica, but only the session's owner holds its live
agent, its running turn and its queue. So the receiving replica finds the session
that stored the message (the database is shared), and hands the change to the
owner's mailbox under the session's key, as ``ReplicaRouter`` hands a message: the
owner serves it in stream order with the session's messages, applies it
(``Retractions``: the transcript, the providers, its live agent, an edited last
turn answered again) and only then acknowledges the entry, so an owner that dies
before leaves it to whoever claims its mailbox. Applying one twice changes nothing
more (a deleted text is gone, an edit writes the same words), and a platform's
retry to another replica is dropped by the shared inbox before it gets here.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict

from gateway.app._ownership import SessionOwnership, key_text
from gateway.events import Retraction
from gateway.replicas import Coordination, Delivery, ReplicaError
from gateway.sessions import Retractions, SharedSessions

__all__ = ["RETRACTION", "RetractionRoutes"]

logger = logging.getLogger(__name__)

RETRACTION = "retraction"
"""The mailbox payload field of a deletion or edit (a message's is ``msg``)."""


def retraction_to_json(retraction: Retraction) -> str:
    return json.dumps(asdict(retraction), ensure_ascii=False)


def retraction_from_json(text: str) -> Retraction:
    """The inverse of ``retraction_to_json``; ``ValueError`` or ``TypeError`` when unreadable."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a retraction")
    return Retraction(**data)


class RetractionRoutes:
    def __init__(
        self,
        coordination: Coordination,
        ownership: SessionOwnership,
        sessions: SharedSessions,
        retractions: Retractions,
    ) -> None:
        self._coordination = coordination
        self._ownership = ownership
        self._sessions = sessions
        self._retractions = retractions

    async def take(self, retraction: Retraction) -> None:
        """Hand ``retraction`` to its session's owner (adapters call this); never raises."""
        r = retraction
        try:
            key = await self._key_of(r)
            if key is None:
                logger.debug("%s message %s is in no transcript; nothing to change", *_of(r))
                return
            owner = await self._ownership.owner_of(key)
            self._ownership.routed(key)
            payload = {"key": key, RETRACTION: retraction_to_json(r)}
            await self._coordination.mailbox.send(owner, payload)
        except Exception as exc:
            logger.warning(
                "a %s message %s could not be handed to its session's replica (%s)",
                r.platform,
                "edit" if r.text is not None else "deletion",
                type(exc).__name__,
            )

    async def _key_of(self, r: Retraction) -> str | None:
        db = self._sessions.db
        found = await db.platform_message(r.platform, r.chat_id, r.message_id)
        record = None if found is None else await db.get_session(found[0].session_id)
        return None if record is None else key_text(self._sessions.key_of(record))

    async def serve(self, delivery: Delivery) -> None:
        """Apply a deletion or edit of this replica's mailbox, then acknowledge it."""
        mailbox = self._coordination.mailbox
        key = delivery.payload.get("key", "")
        try:
            retraction = retraction_from_json(delivery.payload[RETRACTION])
        except (KeyError, ValueError, TypeError) as exc:
            logger.warning("dropped an unreadable mailbox entry (%s)", type(exc).__name__)
            await mailbox.ack(delivery.id)
            return
        owner = await self._ownership.owner_of(key)
        if owner != self._coordination.replica_id:  # claimed from a dead replica, a lease lost
            await mailbox.send(owner, dict(delivery.payload))
            await mailbox.ack(delivery.id)
            self._ownership.metrics.handed_on("message")
            return
        outcome = await self._retractions.run(retraction)
        logger.debug("%s message %s from the mailbox: %s", *_of(retraction), outcome)
        try:
            await mailbox.ack(delivery.id)
        except ReplicaError as exc:  # served again: the change is found made already
            logger.warning("could not acknowledge a mailbox entry (%s)", exc)


def _of(r: Retraction) -> tuple[str, str]:
    return r.platform, r.message_id

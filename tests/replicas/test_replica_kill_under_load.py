"""A replica killed with SIGKILL while its people have answers half shown and more queued.

Twelve people on two real replicas (``tests/replicas/cluster.py``); each sends
three messages in quick succession while the model is slow (each one in its
owner's mailbox before the next is sent), so the first one's answer is half
shown and the other two wait behind it, and then one more message a second for
four seconds after the kill (some reach the survivor while the dead
replica's leases run out). The survivor must take over what the dead one owed
before anything newer, finish each half shown answer in its own message, and
answer every message exactly once, in order.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
import redis

from tests.fakes import Reply
from tests.fakes.telegram_api import BotMessage, FakeTelegram
from tests.replicas.cluster import Cluster
from tests.replicas.test_replicas_process import (
    FIRST_USER,
    cluster,
    last_user_text,
)

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

__all__ = ["cluster"]

PEOPLE = 12
QUEUED = range(1, 4)
"""Sent together before the kill: m1's answer is being written, m2 and m3 wait behind it."""
AFTER = range(4, 20)
"""Sent one a second after the kill, past the time the dead replica's leases run out."""
ALL = AFTER.stop
END = "END"
TAG = re.compile(r"u\d+-m\d+")


def answer_to(body: dict[str, Any], *, stall: float) -> Reply:
    """``R[tags] … END``: the tags of every message the turn covers; with ``stall``, the
    first words come slowly, then the answer stalls (a half answer in the chat)."""
    text = last_user_text(body)
    if "memory" in str(body.get("tools", "")) and "flush" in text.lower():
        return Reply.of_text("")
    tags = ",".join(TAG.findall(text))
    full = f"R[{tags}] " + " ".join(["words"] * 8) + f" {END}"
    if stall:
        return Reply.of_text(full, stall_after=6, stall=stall)
    return Reply.of_text(full, delay=0.2)


def covered(message: BotMessage) -> list[str]:
    found = re.match(r"R\[([^\]]*)\]", message.text)
    return found.group(1).split(",") if found else []


def owners_of(url: str) -> dict[int, str]:
    """Person -> the replica holding their session's lease."""
    client = redis.Redis.from_url(url)
    try:
        owners: dict[int, str] = {}
        for key in client.scan_iter("chorus:lease:*"):
            name = key.decode().removeprefix("chorus:lease:")
            if not name.startswith("["):
                continue
            owner = client.hget(key, "owner")
            if owner:
                owners[int(json.loads(name)[2])] = owner.decode()
        return owners
    finally:
        client.close()


def inbox_receipts(cluster: Cluster, where: str) -> set[str]:
    """Receipts of the inbox's unsettled deliveries matching ``where`` (read as is: no
    schema work that would wait for the replicas' writes)."""
    with psycopg.connect(cluster.database_url) as conn:
        rows = conn.execute(
            f"SELECT receipt FROM inbox WHERE settled_at IS NULL AND {where}"
        ).fetchall()
    return {str(row[0]) for row in rows}


def unrouted(cluster: Cluster) -> set[str]:
    """Deliveries not yet handed to their session's owner."""
    return inbox_receipts(cluster, "routed_at IS NULL")


def noted_shown(cluster: Cluster) -> set[str]:
    """Deliveries whose half answer the inbox noted."""
    return inbox_receipts(cluster, "shown IS NOT NULL AND shown NOT IN ('[]', '')")


def settled(cluster: Cluster) -> bool:
    """No delivery unsettled, no mailbox entry left, no LLM call running."""
    if inbox_receipts(cluster, "TRUE") or cluster.llm.in_flight:
        return False
    client = redis.Redis.from_url(cluster.redis_url)
    try:
        return not any(client.xlen(s) for s in client.scan_iter("chorus:mailbox:*"))
    finally:
        client.close()


@dataclass
class People:
    """The people of the test and what they sent."""

    telegram: FakeTelegram
    ids: list[int]
    sent: dict[str, int] = field(default_factory=dict)
    """``u…-m…`` -> the Telegram message id of the person's message."""
    updates: dict[str, str] = field(default_factory=dict)
    """``u…-m…`` -> its update's id (the inbox's receipt)."""

    def send(self, n: int) -> set[str]:
        """Everyone's message ``n``; returns their receipts."""
        for person in self.ids:
            tag = f"u{person}-m{n}"
            update = self.telegram.message(tag, user_id=person)
            self.sent[tag] = int(update["message"]["message_id"])
            self.updates[tag] = str(update["update_id"])
        return {self.updates[f"u{p}-m{n}"] for p in self.ids}

    def answered(self, messages: range) -> bool:
        """Each person's ``messages`` have a complete answer."""
        return all(
            any(f"u{p}-m{n}" in covered(m) and m.text.endswith(END) for m in chat)
            for p in self.ids
            for chat in [self.telegram.in_chat(p)]
            for n in messages
        )

    def half_shown(self, person: int) -> bool:
        """The answer to the person's m1 alone is in the chat, half written."""
        return any(
            covered(m) == [f"u{person}-m1"] and not m.text.endswith(END)
            for m in self.telegram.in_chat(person)
        )

    def check(self, person: int, *, was_half_shown: bool) -> None:
        chat = self.telegram.in_chat(person)
        shown = [m.history for m in chat]
        tags = [tag for m in chat for tag in covered(m)]
        assert tags == [f"u{person}-m{n}" for n in range(ALL)], shown  # each once, in order
        assert all(m.text.endswith(END) for m in chat), shown  # no fragment left
        for message in chat:
            first = covered(message)
            if len(first) > 1:  # it says which messages it covers: it replies to the first
                assert message.reply_to == self.sent[first[0]], shown
        if was_half_shown:  # finished in the message it had shown, alone
            [finished] = [m for m in chat if f"u{person}-m1" in covered(m)]
            assert covered(finished) == [f"u{person}-m1"], shown
            assert not finished.history[0].endswith(END), shown


async def test_a_replica_killed_under_load_answers_each_message_once_in_order(
    cluster: Cluster,
) -> None:
    """12 people, 3 messages each in flight or queued when their replica is killed and 16
    more each after the kill. Was: the survivor merged the dead replica's queued messages
    into one answer, the half shown one among them, and a message sent as the dead one's
    leases ran out was answered before the ones it owed. Now every message is covered
    exactly once and in order (12 of 12), each half shown answer is finished in its own
    message, alone (no fragment left beside a second answer), and an answer covering
    several messages replies to the first of them."""
    cluster.env.update(
        {
            "CHORUS_GATEWAY__LEASE_SECONDS": "10",  # no live replica stalls past it
            "CHORUS_GATEWAY__ORPHAN_SECONDS": "3",
            "CHORUS_MEMORY__FLUSH_MIN_TURNS": "100",
        }
    )
    telegram = cluster.telegram
    cluster.llm.responder(lambda body: answer_to(body, stall=0))
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.worker("worker-1")
    cluster.balance(a, b)
    people = People(telegram, [FIRST_USER + n for n in range(PEOPLE)])
    people.send(0)
    await telegram.wait_for(lambda: people.answered(range(1)), timeout=120, what="first answers")
    owners = owners_of(cluster.redis_url)
    on_a = [p for p in people.ids if owners.get(p) == "replica-a"]
    assert on_a, owners  # the balancer spread the sessions over both replicas

    cluster.llm.stream_piece_delay = 0.3  # the first words are shown before the stall
    cluster.llm.responder(lambda body: answer_to(body, stall=60.0))
    for n in QUEUED:  # each reaches its owner's mailbox before the person's next is sent
        receipts = people.send(n)
        await telegram.wait_for(
            lambda r=receipts: not r & unrouted(cluster), timeout=60, what=f"m{n} routed"
        )
    await telegram.wait_for(
        lambda: all(people.half_shown(p) for p in on_a), timeout=60, what="half answers on a"
    )
    # noted as shown (a kill before the note would leave the message behind: nothing
    # can ask Telegram for it)
    firsts = {people.updates[f"u{p}-m1"] for p in on_a}
    await telegram.wait_for(lambda: firsts <= noted_shown(cluster), what="half answers noted")
    a.kill()
    cluster.balance(b, a)  # the balancer still tries the dead one in turn
    cluster.llm.stream_piece_delay = 0.0
    cluster.llm.responder(lambda body: answer_to(body, stall=0))
    for n in AFTER:
        people.send(n)
        await asyncio.sleep(1.0)  # the people's pace, not a wait for a result

    await telegram.wait_for(lambda: people.answered(range(ALL)), timeout=240, what="every answer")
    await telegram.wait_for(lambda: settled(cluster), timeout=60, what="all settled")
    for person in people.ids:
        people.check(person, was_half_shown=person in on_a)

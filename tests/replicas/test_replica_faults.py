"""Real gateway replicas under a Redis restart, a graceful stop and a pause.

Each test runs real ``chorus gateway --replica-id`` processes on one redis-server
and one PostgreSQL database (``tests/replicas/cluster.py``); the fake Telegram
posts its webhook updates to the replicas in turn, as a load balancer would.
"""

from __future__ import annotations

import asyncio
import json
import signal

import pytest
import redis

from memory.transcripts import SessionDB
from tests.fakes.redis_server import RedisServer
from tests.replicas.cluster import Cluster
from tests.replicas.test_replicas_process import (
    FIRST_USER,
    answers,
    cluster,
    converse,
    echo,
    lease_owners,
)

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

__all__ = ["cluster"]  # the fixture, shared with the other replica tests


async def test_after_a_redis_restart_no_message_is_late_or_overtaken(
    cluster: Cluster, redis_server: RedisServer
) -> None:
    """Redis restarts between two messages of 6 people served by 2 replicas, whose
    pooled connections are then stale: each of the next 7 messages of each person is
    answered in order, 6 of 6, and none by a held route's retry or the orphan sweep
    (the first comes after 100 s, the second after 300 s here: longer than the test
    waits for any answer), so none is late or overtaken (before: 1 of 6 people had
    a message come 10 s late, after their next six)."""
    cluster.env.update(
        {
            # no upkeep round (every 100 s) notices the restart or retries a held route
            "CHORUS_GATEWAY__LEASE_SECONDS": "300",
            "CHORUS_GATEWAY__ORPHAN_SECONDS": "300",
        }
    )
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(6)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(1)) for u in users))

    redis_server.stop()
    redis_server.start()  # the same port, empty; no replica has noticed yet

    await asyncio.gather(*(converse(cluster.telegram, u, range(1, 8), timeout=60) for u in users))
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(8)]


async def test_a_replica_stopping_hands_its_mailbox_over_at_once(cluster: Cluster) -> None:
    """A replica is stopped (SIGTERM) while it finishes a turn; meanwhile the other
    5 of 6 people write to the other replica, which routes the messages of the stopping
    one's sessions to it. At its exit it hands them over: each of the 6 is answered,
    in order, 6 of 6, without waiting for the other's upkeep (every 200 s here, longer
    than the test waits for an answer) (before: 2 of 2 runs waited for that upkeep
    and answered out of order)."""
    cluster.env["CHORUS_GATEWAY__LEASE_SECONDS"] = "600"
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(6)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(2)) for u in users))
    assert lease_owners(cluster.redis_url)["replica-a"] > 0

    slow = users[0]
    cluster.llm.responder(echo(delay=3.0))
    cluster.balance(a)
    cluster.telegram.message(f"u{slow} m2", user_id=slow)
    await cluster.telegram.wait_for(lambda: cluster.llm.in_flight >= 1, what="a turn running")
    a.proc.send_signal(signal.SIGTERM)  # a rolling restart: a goes first
    cluster.balance(b)
    cluster.llm.responder(echo())
    for user in users[1:]:
        cluster.telegram.message(f"u{user} m2", user_id=user)
    assert await asyncio.to_thread(a.proc.wait, 60) == 0
    for user in users:
        await cluster.telegram.wait_for(
            lambda u=user: f"echo: u{u} m2" in answers(cluster.telegram, u),
            timeout=60,
            what=f"the answer to u{user} m2",
        )
    await asyncio.gather(*(converse(cluster.telegram, u, range(3, 4)) for u in users))
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(4)]
    assert set(lease_owners(cluster.redis_url)) == {"replica-b"}


def written(database_url: str, texts: list[str]) -> bool:
    """Whether each of ``texts`` is a user message in the shared transcripts."""
    with SessionDB(database_url) as db:
        found = {
            m.content
            for record in db.list_sessions(limit=100)
            for m in db.get_messages(record.id)
            if m.role == "user"
        }
    return set(texts) <= found


def sessions_of(redis_url: str, replica: str) -> list[int]:
    """The Telegram users whose session ``replica`` holds the lease of."""
    client = redis.Redis.from_url(redis_url)
    try:
        found = []
        for key in client.scan_iter("chorus:lease:*"):
            if b"token" in key or client.hget(key, "owner") != replica.encode():
                continue
            platform, _, user_id, _ = json.loads(key.decode().removeprefix("chorus:lease:"))
            if platform == "telegram":
                found.append(int(user_id))
        return sorted(found)
    finally:
        client.close()


async def test_a_replica_paused_past_its_lease_sends_and_writes_nothing_more(
    cluster: Cluster,
) -> None:
    """A replica is paused (SIGSTOP) for 3 lease times while it writes 3 answers; the
    other one takes the 3 sessions over and answers. Resumed (SIGCONT), the paused one
    says in its log it lost each lease and neither sends, edits nor writes anything of
    those turns: each of the 3 messages is answered once, each transcript holds one
    answer to it (before: 3 of 3 answered twice, an extra assistant message)."""
    cluster.env["CHORUS_GATEWAY__LEASE_SECONDS"] = "2"
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.balance(a, b)
    people = [FIRST_USER + n for n in range(8)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(1)) for u in people))
    users = sessions_of(cluster.redis_url, "replica-a")[:3]
    assert len(users) == 3, users

    cluster.llm.responder(echo(delay=1.0))  # in flight at the pause; answered while paused
    cluster.balance(b)
    for user in users:
        cluster.telegram.message(f"u{user} m1", user_id=user)
    await cluster.telegram.wait_for(lambda: cluster.llm.in_flight >= 3, what="3 turns running")
    # their messages committed too (a turn's request leaves while its message is written;
    # a pause inside that write would hold its transaction, and the other replica with it)
    await cluster.telegram.wait_for(
        lambda: written(cluster.database_url, [f"u{u} m1" for u in users]),
        what="the 3 messages in the transcripts",
    )
    a.proc.send_signal(signal.SIGSTOP)
    cluster.llm.responder(echo())
    for user in users:  # the other replica takes the sessions over and answers
        await cluster.telegram.wait_for(
            lambda u=user: f"echo: u{u} m1" in answers(cluster.telegram, u),
            timeout=30,
            what=f"the answer to u{user} m1",
        )
    calls = len(cluster.telegram.calls_of("sendMessage")) + len(
        cluster.telegram.calls_of("editMessageText")
    )
    a.proc.send_signal(signal.SIGCONT)
    await cluster.telegram.wait_for(
        lambda: a.log.read_text().count("lost the lease of session") >= 3,
        timeout=30,
        what="the resumed replica to find it lost the leases",
    )
    await asyncio.sleep(3.0)  # anything the resumed replica would still send, it has sent
    sent = len(cluster.telegram.calls_of("sendMessage")) + len(
        cluster.telegram.calls_of("editMessageText")
    )
    assert sent == calls
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(2)]
    with SessionDB(cluster.database_url) as db:
        for record in db.list_sessions(limit=100):
            if record.user_id in {str(u) for u in users}:
                said = [m.content for m in db.get_messages(record.id) if m.role == "assistant"]
                assert said == [f"echo: u{record.user_id} m{n}" for n in range(2)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(2, 3)) for u in users))

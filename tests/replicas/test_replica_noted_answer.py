"""An answer its replica noted, then died before delivering: the survivor delivers it.

Real replicas on one redis-server and one PostgreSQL (``tests/replicas/cluster.py``).
The turn's answer is written ahead in the shared inbox before it goes out; here
Telegram holds the owner back (429, retry after 15 s) and the test kills it meanwhile.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.replicas.cluster import Cluster
from tests.replicas.test_replicas_process import (
    FIRST_USER,
    answers,
    cluster,
    converse,
    echo,
    last_user_text,
    lease_owners,
)

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

__all__ = ["cluster"]


def noted_answers(cluster: Cluster) -> list[str]:
    """Answers noted in the inbox for deliveries not settled yet."""
    with psycopg.connect(cluster.database_url) as conn:
        rows = conn.execute(
            "SELECT shown FROM inbox WHERE settled_at IS NULL AND shown LIKE '{%'"
        ).fetchall()
    return [str(json.loads(row[0]).get("answer")) for row in rows]


async def test_an_answer_noted_by_a_replica_killed_before_delivering_it_is_delivered_once(
    cluster: Cluster,
) -> None:
    """The owner noted the answer, then Telegram made it wait and it was killed: the new
    owner delivers that same answer, once, without asking the model again (1 of 1)."""
    cluster.env["CHORUS_GATEWAY__LEASE_SECONDS"] = "3"
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.worker("worker-1")
    cluster.balance(a)  # the person's session starts on replica-a
    person = FIRST_USER
    await converse(cluster.telegram, person, range(1))
    assert lease_owners(cluster.redis_url)["replica-a"] == 1

    # Telegram makes the owner wait (every replica keeps to that chat's block: the
    # survivor delivers once it is over)
    cluster.telegram.flood(1, retry_after=15, methods=("sendMessage",))
    cluster.telegram.message(f"u{person} m1", user_id=person)
    expected = f"echo: u{person} m1"
    await cluster.telegram.wait_for(
        lambda: expected in noted_answers(cluster), timeout=60, what="the answer noted"
    )
    assert answers(cluster.telegram, person) == [f"echo: u{person} m0"]  # not delivered yet
    a.kill()
    cluster.balance(b)

    await cluster.telegram.wait_for(
        lambda: expected in answers(cluster.telegram, person), timeout=90, what=expected
    )
    await converse(cluster.telegram, person, range(2, 3))  # and the conversation goes on
    assert answers(cluster.telegram, person) == [f"echo: u{person} m{n}" for n in (0, 1, 2)]
    asked = [last_user_text(r) for r in cluster.llm.requests]
    assert sum(f"u{person} m1" in text for text in asked) == 1  # the model was asked once
    # each delivery is settled just after it is sent: no noted answer stays behind
    await cluster.telegram.wait_for(
        lambda: not noted_answers(cluster), timeout=30, what="every noted answer settled"
    )

"""Two real gateway replicas and two workers on one redis-server and one PostgreSQL database.

The fake Telegram posts webhook updates to the replicas in turn (a load balancer).
Every message is answered exactly once and in order; when a replica is killed
with SIGKILL mid-conversation its sessions go on on the other one, nothing is
lost or answered twice, and every session still ends exactly once.
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis
from rq import Queue
from rq.registry import StartedJobRegistry

from gateway.sessions import Inbox
from memory.store import PostgresMemoryFiles
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI, Reply
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import event_callback, post_event
from tests.fakes.telegram_api import FakeTelegram
from tests.integration.recorder_plugin import install_recorder, read_log
from tests.replicas.cluster import Cluster
from tests.waiting import until

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

FIRST_USER = 5000


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content)
    return str(content)


def echo(delay: float = 0.0) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        text = last_user_text(body)
        if "memory" in str(body.get("tools", "")) and "flush" in text.lower():
            return Reply.of_text("")
        return Reply.of_text(f"echo: {text.splitlines()[-1]}", delay=delay)

    return answer


@pytest.fixture
async def cluster(
    tmp_path: Path, redis_server: RedisServer, postgres_url: str, server: FakeOpenAI
) -> AsyncIterator[Cluster]:
    with FakeTelegram() as telegram, FakeSlack() as slack:
        made = Cluster(
            tmp_path / "cluster", redis_server.url, postgres_url, server, telegram, slack
        )
        try:
            yield made
        finally:
            made.close()


async def converse(telegram: FakeTelegram, user: int, messages: range, timeout: float = 90) -> None:
    """One person: each message sent after the answer to the one before it arrived."""
    for n in messages:
        telegram.message(f"u{user} m{n}", user_id=user)
        expected = f"echo: u{user} m{n}"
        try:
            await telegram.wait_for(
                lambda expected=expected: any(m.text == expected for m in telegram.in_chat(user)),
                timeout=timeout,
            )
        except AssertionError:
            raise AssertionError(
                f"no {expected!r}; the chat shows {answers(telegram, user)}"
            ) from None


def http_get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return int(response.status), response.read().decode()


def answers(telegram: FakeTelegram, user: int) -> list[str]:
    return [m.text for m in telegram.in_chat(user)]


def lease_owners(url: str) -> Counter[str]:
    client = redis.Redis.from_url(url)
    owners: Counter[str] = Counter()
    for key in client.scan_iter("chorus:lease:*"):
        if b"token" in key:
            continue
        owner = client.hget(key, "owner")
        if owner:
            owners[owner.decode()] += 1
    return owners


def all_settled(cluster: Cluster) -> bool:
    """Every delivery in the shared inbox settled, every mailbox empty, no LLM call running."""
    with Inbox(cluster.database_url) as inbox:
        if any(inbox.pending(platform) for platform in ("telegram", "slack")):
            return False
    client = redis.Redis.from_url(cluster.redis_url)
    try:
        mailboxes = list(client.scan_iter("chorus:mailbox:*"))
        if any(client.xlen(stream) for stream in mailboxes):
            return False
    finally:
        client.close()
    return cluster.llm.in_flight == 0


def background_idle(cluster: Cluster) -> bool:
    """No job of the background queue waiting or running."""
    client = redis.Redis.from_url(cluster.redis_url)
    try:
        queue = Queue("chorus", connection=client)
        return queue.count == 0 and StartedJobRegistry(queue=queue).count == 0
    finally:
        client.close()


async def converse_on_slack(cluster: Cluster, person: int, messages: range) -> None:
    """One Slack person in a DM; each event posted to the next replica, as Slack's
    requests would reach whichever replica the load balancer picks."""
    assert cluster.slack is not None
    user, channel = f"UP{person:07d}", f"DP{person:07d}"
    replicas = [p for p in cluster.processes if p.port is not None]
    for n in messages:
        event = cluster.slack.person(f"s{person} m{n}", user=user, channel=channel)
        target = replicas[(person + n) % len(replicas)]
        status, _ = await post_event(f"{target.url}/slack/events", event_callback(event))
        assert status == 200
        expected = f"echo: s{person} m{n}"
        await cluster.slack.wait_for(
            lambda expected=expected: any(
                p.text == expected
                for p in cluster.slack.posted_in(channel)  # type: ignore[union-attr]
            ),
            timeout=90,
            what=expected,
        )


def remembering(body: dict[str, Any]) -> Reply:
    """Echo; a person's first message is first noted in their USER.md (the memory tool)."""
    last = body["messages"][-1]
    text = last_user_text(body).splitlines()[0]
    if last["role"] == "user" and text.endswith(" m0"):
        note = {"action": "add", "target": "user", "content": f"This is {text.split()[0]}"}
        return Reply.of_tool_calls([("memory", note)])
    return echo()(body)


async def test_two_replicas_answer_fifty_people_once_each_in_order(cluster: Cluster) -> None:
    cluster.llm.responder(remembering)
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.worker("worker-1")
    cluster.worker("worker-2")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(50)]
    slack_people = range(10)

    await asyncio.wait_for(
        asyncio.gather(
            *(converse(cluster.telegram, u, range(10)) for u in users),
            *(converse_on_slack(cluster, p, range(5)) for p in slack_people),
        ),
        240,
    )
    # nothing is left that could still answer twice: no delivery unsettled, no mailbox
    # entry unacknowledged, no LLM call running
    await cluster.telegram.wait_for(
        lambda: all_settled(cluster), timeout=60, what="every delivery settled"
    )
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(10)]
    for person in slack_people:
        shown = [p.text for p in cluster.slack.posted_in(f"DP{person:07d}")]  # type: ignore[union-attr]
        assert shown == [f"echo: s{person} m{n}" for n in range(5)]
    posted = {target for _, target, status in cluster.telegram.webhook_posts if status == 200}
    assert posted == {f"{a.url}/telegram/webhook", f"{b.url}/telegram/webhook"}
    owners = lease_owners(cluster.redis_url)
    assert owners["replica-a"] > 0 and owners["replica-b"] > 0  # both ran sessions
    for replica in (a, b):
        status, text = await asyncio.to_thread(http_get, f"{replica.url}/metrics")
        assert status == 200 and f'target_info{{replica="{replica.name}"}} 1.0' in text
        status, text = await asyncio.to_thread(http_get, f"{replica.url}/readyz")
        assert status == 200
        assert all(f'"{check}": true' in text for check in ("postgres", "redis", "replica"))
    asked = Counter(
        last_user_text(r).splitlines()[0]
        for r in cluster.llm.requests
        if r["messages"][-1]["role"] == "user"
    )
    assert all(asked[f"u{u} m{n}"] == 1 for u in users for n in range(10))  # each asked once
    with PostgresMemoryFiles(cluster.database_url, Path("/memories")) as files:
        profiles = dict(files.all_files())
    expected = {f"users/telegram/{u}/USER.md": f"This is u{u}" for u in users}
    expected |= {f"users/slack/UP{p:07d}/USER.md": f"This is s{p}" for p in slack_people}
    assert profiles == expected  # each person's profile holds what they said, nobody else's
    assert all(asked[f"s{p} m{n}"] == 1 for p in slack_people for n in range(5))
    with SessionDB(cluster.database_url) as db:
        sessions = db.list_sessions(limit=1000)
    assert len(sessions) == 60  # one session per person, whichever replica served them


async def test_a_replica_killed_mid_conversation_loses_nothing_and_sessions_end_once(
    cluster: Cluster,
) -> None:
    cluster.env.update(
        {
            "CHORUS_GATEWAY__LEASE_SECONDS": "3",
            "CHORUS_GATEWAY__ORPHAN_SECONDS": "3",
            "CHORUS_SESSIONS__IDLE_MINUTES": "0.25",
            "CHORUS_SESSIONS__DAILY_RESET_HOUR": "null",
            "CHORUS_MEMORY__PROVIDER": "recorder",
            "CHORUS_MEMORY__FLUSH_MIN_TURNS": "100",
        }
    )
    for name in ("replica-a", "replica-b", "worker-1"):
        install_recorder(cluster.home(name))
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.worker("worker-1")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(10)]
    await asyncio.wait_for(
        asyncio.gather(*(converse(cluster.telegram, u, range(3)) for u in users)), 120
    )

    cluster.llm.responder(echo(delay=1.5))  # the next answers are in progress at the kill
    for user in users:
        cluster.telegram.message(f"u{user} m3", user_id=user)
    await cluster.telegram.wait_for(lambda: cluster.llm.in_flight >= 3, what="turns running")
    a.kill()
    cluster.balance(b, a)  # the balancer still tries the dead one in turn
    cluster.llm.responder(echo())
    for user in users:
        await cluster.telegram.wait_for(
            lambda u=user: f"echo: u{u} m3" in answers(cluster.telegram, u),
            timeout=60,
            what=f"the answer to u{user} m3",
        )
    await asyncio.wait_for(
        asyncio.gather(*(converse(cluster.telegram, u, range(4, 6)) for u in users)), 120
    )
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(6)]

    def all_ended() -> bool:
        with SessionDB(cluster.database_url) as db:
            return all(s.ended_at is not None for s in db.list_sessions(limit=1000))

    await cluster.telegram.wait_for(all_ended, timeout=120, what="every session ended")
    with SessionDB(cluster.database_url) as db:
        sessions = db.list_sessions(limit=1000)
    assert len(sessions) == len(users)  # the conversations went on in the same sessions

    def ends() -> Counter[str]:
        return Counter(
            entry["session"]
            for name in ("replica-a", "replica-b", "worker-1")
            for entry in read_log(cluster.home(name))
            if entry.get("hook") == "on_session_end"
        )

    # every ending reached the provider and no background job is left that could end one again
    await cluster.telegram.wait_for(
        lambda: set(ends()) == {s.id for s in sessions} and background_idle(cluster),
        timeout=60,
        what="every session end handled",
    )
    assert all_settled(cluster)
    assert ends() == Counter({s.id: 1 for s in sessions})


async def test_two_replicas_sending_into_one_group_keep_within_its_budget(
    cluster: Cluster,
) -> None:
    """Two people in one group, each session on another replica, each answer four
    messages long: together the replicas stay within the group's one budget."""
    from gateway.adapters.telegram._pacing import GROUP_BURST, GROUP_RATE

    cluster.env["CHORUS_GATEWAY__GROUP_REQUIRE_MENTION"] = "false"
    long_answer = "\n\n".join(f"part {n}: " + "lorem ipsum " * 300 for n in range(4))
    cluster.llm.responder(lambda body: Reply.of_text(long_answer, delay=1.0))
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.worker("worker-1")
    cluster.balance(a, b)
    group = -100777
    cluster.telegram.message("tell me a long story", user_id=FIRST_USER, chat_id=group)
    cluster.telegram.message("me too, a long one", user_id=FIRST_USER + 1, chat_id=group)

    def delivered() -> int:
        return sum(m.text.startswith("part 3:") for m in cluster.telegram.in_chat(group))

    await cluster.telegram.wait_for(lambda: delivered() == 2, timeout=120, what="both answers")
    owners = lease_owners(cluster.redis_url)
    assert owners["replica-a"] == 1 and owners["replica-b"] == 1  # one session each
    stamps = sorted(
        call.at
        for method in ("sendMessage", "editMessageText")
        for call in cluster.telegram.calls_of(method)
        if str(call.params.get("chat_id")) == str(group)
    )
    assert len(stamps) >= 8
    for window in (1.0, 3.0, 10.0):
        worst = max(sum(1 for t in stamps if start <= t < start + window) for start in stamps)
        assert worst <= GROUP_BURST + GROUP_RATE * window + 1, (window, worst)


async def test_a_replica_that_lost_redis_answers_503_and_nothing_is_lost(
    cluster: Cluster, redis_server: RedisServer
) -> None:
    cluster.env["CHORUS_GATEWAY__LEASE_SECONDS"] = "3"
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    cluster.worker("worker-1")
    cluster.balance(a)
    await converse(cluster.telegram, FIRST_USER, range(1))

    redis_server.stop()

    async def not_ready() -> bool:
        status, _ = await asyncio.to_thread(http_get_status, f"{a.url}/readyz")
        return status == 503

    # a delivery in the moment before the replica meets the loss is taken and routed
    # once Redis is back (its sweep); from the moment it knows, it refuses them
    await until(not_ready, 30, "the replica not ready")

    def refused() -> bool:
        return any(status == 503 for _, _, status in cluster.telegram.webhook_posts)

    cluster.telegram.message(f"u{FIRST_USER} m1", user_id=FIRST_USER)
    await cluster.telegram.wait_for(refused, timeout=30, what="the webhook refused")
    assert answers(cluster.telegram, FIRST_USER) == [f"echo: u{FIRST_USER} m0"]

    redis_server.start()  # the same port, empty: the replica finds its way back
    await cluster.telegram.wait_for(
        lambda: f"echo: u{FIRST_USER} m1" in answers(cluster.telegram, FIRST_USER),
        timeout=60,
        what="the answer after Redis came back",
    )
    await converse(cluster.telegram, FIRST_USER, range(2, 3))
    assert answers(cluster.telegram, FIRST_USER) == [f"echo: u{FIRST_USER} m{n}" for n in range(3)]


def http_get_status(url: str) -> tuple[int, str]:
    try:
        return http_get(url)
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


async def test_a_second_long_poller_on_one_token_refuses_to_start(cluster: Cluster) -> None:
    cluster.env["CHORUS_TELEGRAM__WEBHOOK_URL"] = ""
    cluster.llm.responder(echo())
    first = await cluster.replica("replica-a")
    with pytest.raises(AssertionError, match="exited"):
        await cluster.replica("replica-b")
    second = cluster.processes[-1]
    assert second.proc.returncode == 2
    log = second.log.read_text()
    assert "another replica (replica-a" in log and "webhook_url" in log
    assert cluster.telegram.token not in log
    await converse(cluster.telegram, FIRST_USER, range(2))  # the first one polls on
    assert first.proc.poll() is None


async def test_a_replica_stopped_with_sigterm_hands_its_sessions_over(cluster: Cluster) -> None:
    cluster.env["CHORUS_GATEWAY__LEASE_SECONDS"] = "3"
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.worker("worker-1")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(6)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(2)) for u in users))
    owners = lease_owners(cluster.redis_url)
    assert owners["replica-a"] > 0

    assert await asyncio.to_thread(a.stop) == 0  # a rolling restart: a goes first
    cluster.balance(b)
    with SessionDB(cluster.database_url) as db:
        before = {s.id for s in db.list_sessions(limit=100)}
        assert all(s.ended_at is None and s.end_reason is None for s in db.list_sessions())
    await asyncio.gather(*(converse(cluster.telegram, u, range(2, 4)) for u in users))
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(4)]
    with SessionDB(cluster.database_url) as db:
        assert {s.id for s in db.list_sessions(limit=100)} == before  # the same sessions go on
    assert lease_owners(cluster.redis_url) == Counter({"replica-b": len(users)})

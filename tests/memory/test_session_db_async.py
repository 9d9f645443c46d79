"""AsyncSessionDB: the same store from asyncio, without blocking the event loop."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import AsyncSessionDB
from tests.waiting import until

ALICE = "slack:U1"
BOB = "slack:U2"


@pytest.fixture
async def adb(tmp_path: Path) -> AsyncIterator[AsyncSessionDB]:
    database = await AsyncSessionDB.open(tmp_path / "sessions.db")
    yield database
    await database.aclose()


async def test_methods_work_from_asyncio(adb: AsyncSessionDB) -> None:
    await adb.create_session(
        "s1", platform="slack", user_key=ALICE, chat_id="C1", model="m", started_at=100.0
    )
    await adb.create_session("s1", platform="slack", user_key=BOB, started_at=999.0)
    await adb.create_session("s2", platform="slack", user_key=BOB, chat_id="C1", started_at=200.0)
    call = {"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}
    await adb.append_message("s1", "user", "the quokka is my favourite", timestamp=110.0)
    await adb.append_message("s1", "assistant", None, tool_calls=[call], timestamp=120.0)
    await adb.append_message("s1", "tool", "saved", tool_call_id="c1", tool_name="memory")
    await adb.add_usage("s1", input_tokens=10, output_tokens=4)
    await adb.set_title("s1", "Quokkas")
    await adb.set_system_prompt("s1", "Be brief.")

    messages = await adb.get_messages("s1")
    assert [m.to_openai()["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1].to_openai()["tool_calls"] == [call]
    record = await adb.get_session("s1")
    assert record is not None
    assert (record.user_key, record.message_count, record.tool_call_count) == (ALICE, 3, 1)
    assert (record.input_tokens, record.output_tokens, record.title) == (10, 4, "Quokkas")
    assert record.system_prompt == "Be brief."

    assert [r.id for r in await adb.list_sessions()] == ["s2", "s1"]
    assert [r.id for r in await adb.list_sessions(user_key=ALICE)] == ["s1"]
    assert [hit.session_id for hit in await adb.search(ALICE, "quokka")] == ["s1"]
    assert await adb.search(BOB, "quokka") == []
    assert await adb.search(ALICE, "quokka", exclude_session_id="s1") == []

    assert await adb.end_session("s1", "new", ended_at=130.0) is True
    assert await adb.end_session("s1", "idle", ended_at=140.0) is False
    await adb.set_summary("s1", "Talked about quokkas.")
    assert [r.id for r in await adb.find_open_sessions()] == ["s2"]
    assert await adb.latest_summary(ALICE, "slack", "C1", None) == "Talked about quokkas."
    assert await adb.latest_summary(BOB, "slack", "C1", None) is None
    assert adb.db.get_session("s1") is not None


async def test_user_view_is_scoped(adb: AsyncSessionDB) -> None:
    await adb.create_session("a", platform="slack", user_key=ALICE)
    await adb.create_session("b", platform="slack", user_key=BOB)
    await adb.append_message("a", "user", "marmalade sandwiches")
    alice, bob = adb.for_user(ALICE), adb.for_user(BOB)
    assert alice.user_key == ALICE
    assert [hit.session_id for hit in await alice.search("marmalade")] == ["a"]
    assert await alice.search("marmalade", exclude_session_id="a") == []
    assert await bob.search("marmalade") == []
    assert [r.id for r in await bob.list_sessions()] == ["b"]
    with pytest.raises(SessionDBError):
        adb.for_user("")


async def test_calls_reach_the_database_in_order(adb: AsyncSessionDB) -> None:
    await adb.create_session("s1", platform="slack", user_key=ALICE)
    ids = await asyncio.gather(
        *(adb.append_message("s1", "user", f"message {n}") for n in range(20))
    )
    assert ids == sorted(ids)
    contents = [m.content for m in await adb.get_messages("s1")]
    assert contents == [f"message {n}" for n in range(20)]


async def test_event_loop_keeps_running_while_the_database_is_busy(
    adb: AsyncSessionDB,
) -> None:
    await adb.create_session("s1", platform="slack", user_key=ALICE)
    lock_held = threading.Event()
    release = threading.Event()

    def hold_lock() -> None:
        with adb.db._lock:
            lock_held.set()
            release.wait(timeout=5)

    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.002)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    assert await asyncio.to_thread(lock_held.wait, 5)
    ticking = asyncio.create_task(ticker())
    pending = asyncio.create_task(adb.get_session("s1"))
    await asyncio.sleep(0)
    ticks_at_call = ticks
    await until(
        lambda: ticks >= ticks_at_call + 5 or pending.done(), 10, "five ticks or the answer"
    )
    ticked_while_pending = not pending.done()
    release.set()
    record = await pending
    stop.set()
    await ticking
    holder.join()

    assert ticked_while_pending
    assert ticks >= ticks_at_call + 5
    assert record is not None
    assert record.id == "s1"


async def test_aclose(tmp_path: Path) -> None:
    database = await AsyncSessionDB.open(tmp_path / "sessions.db")
    await database.create_session("s1", platform="slack", user_key=ALICE)
    await database.aclose()
    await database.aclose()
    with pytest.raises(SessionDBError, match="closed"):
        await database.get_session("s1")
    with pytest.raises(SessionDBError, match="closed"):
        database.db.get_session("s1")


async def test_writes_queued_together_commit_once_and_each_caller_hears_its_own(
    adb: AsyncSessionDB,
) -> None:
    await adb.create_session("s1", platform="slack", user_key=ALICE)
    assert adb.db._conn is not None
    statements: list[str] = []
    adb.db._conn.set_trace_callback(statements.append)
    tasks = await _queued_behind_a_busy_thread(
        adb,
        *(functools.partial(adb.append_message, "s1", "user", f"message {n}") for n in range(10)),
        lambda: adb.append_message("gone", "user", "to no session"),
        lambda: adb.add_usage("s1", input_tokens=5),
    )
    adb.db._conn.set_trace_callback(None)
    ids = [task.result() for task in tasks[:10]]
    bad = tasks[10].exception()
    assert isinstance(bad, SessionDBError) and "unknown session" in str(bad)
    assert tasks[11].exception() is None

    assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
    ]
    assert adb.batches == 1
    assert ids == sorted(ids)
    messages = await adb.get_messages("s1")
    assert [m.id for m in messages] == ids  # the failed one undid only itself
    record = await adb.get_session("s1")
    assert record is not None
    assert (record.message_count, record.input_tokens) == (10, 5)


async def test_a_read_between_writes_sees_the_writes_before_it(adb: AsyncSessionDB) -> None:
    await adb.create_session("s1", platform="slack", user_key=ALICE)
    first = adb.append_message("s1", "user", "one")
    read = adb.get_messages("s1")
    second = adb.append_message("s1", "user", "two")
    _, seen, _ = await asyncio.gather(first, read, second)
    assert [m.content for m in seen] == ["one"]
    assert [m.content for m in await adb.get_messages("s1")] == ["one", "two"]


async def _queued_behind_a_busy_thread(
    adb: AsyncSessionDB, *calls: Callable[[], Awaitable[object]]
) -> list[asyncio.Task[object]]:
    """Start ``calls`` while the worker thread waits for the lock, so they queue as one."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with adb.db._lock:
            held.set()
            release.wait(timeout=5)

    holder = threading.Thread(target=hold)
    holder.start()
    assert await asyncio.to_thread(held.wait, 5)
    blocker = asyncio.create_task(adb.get_session("none"))
    await asyncio.sleep(0.05)
    tasks = [asyncio.create_task(call()) for call in calls]  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    release.set()
    await blocker
    holder.join()
    await asyncio.wait(tasks)
    return tasks


async def test_a_write_failing_alone_leaves_the_others_of_its_batch(
    adb: AsyncSessionDB,
) -> None:
    await adb.create_session("s1", platform="slack", user_key=ALICE)
    assert adb.db._conn is not None
    adb.db._conn.execute(
        "CREATE TEMP TRIGGER refuse AFTER INSERT ON messages"
        " WHEN NEW.content = 'poison' BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    before, poison, after = await _queued_behind_a_busy_thread(
        adb,
        lambda: adb.append_message("s1", "user", "before"),
        lambda: adb.append_message("s1", "user", "poison"),
        lambda: adb.append_message("s1", "user", "after"),
    )
    assert isinstance(poison.exception(), SessionDBError)
    assert "refused" in str(poison.exception())
    assert isinstance(before.result(), int) and isinstance(after.result(), int)
    assert [m.content for m in await adb.get_messages("s1")] == ["before", "after"]
    assert adb.batches == 1


async def test_when_the_batch_is_undone_every_write_in_it_fails(adb: AsyncSessionDB) -> None:
    await adb.create_session("s1", platform="slack", user_key=ALICE)
    assert adb.db._conn is not None
    adb.db._conn.execute(  # ROLLBACK undoes the whole transaction, not one statement
        "CREATE TEMP TRIGGER undo AFTER INSERT ON messages"
        " WHEN NEW.content = 'poison' BEGIN SELECT RAISE(ROLLBACK, 'undone'); END"
    )
    tasks = await _queued_behind_a_busy_thread(
        adb,
        lambda: adb.append_message("s1", "user", "before"),
        lambda: adb.append_message("s1", "user", "poison"),
        lambda: adb.append_message("s1", "user", "after"),
    )
    assert all(isinstance(task.exception(), SessionDBError) for task in tasks)
    assert await adb.get_messages("s1") == []  # no caller was told "done" for an undone write
    await adb.append_message("s1", "user", "later")  # and the database goes on
    assert [m.content for m in await adb.get_messages("s1")] == ["later"]

"""kill -9 of a real ``chorus gateway`` mid-answer: after the restart the message is answered
exactly once (a half-streamed answer finished in its own message), or, past
``sessions.resume_pending_minutes``, its sender gets one short notice."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent.flush import FLUSH_PROMPT
from memory.paths import ChorusPaths
from tests.fakes import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN
from tests.telegram.test_telegram_process import CHORUS, free_port, gateway_env, wait_ready


@pytest.fixture
async def gateway(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram, tmp_path: Path
) -> AsyncIterator[Callable[..., object]]:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []

    async def start(**extra: str) -> subprocess.Popen[bytes]:
        env = {**gateway_env(chorus_home, server, telegram, port), "CHORUS_LOG_LEVEL": "INFO"}
        env.update(extra)
        logs.append(tmp_path / f"gateway-{len(logs)}.log")
        with logs[-1].open("wb") as log:
            proc = subprocess.Popen(
                [str(CHORUS), "gateway"], env=env, stderr=log, stdout=subprocess.DEVNULL
            )
        procs.append(proc)
        await wait_ready(port)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    for log in logs:  # shown by pytest when the test failed
        print(f"--- {log.name}", *log.read_text(errors="replace").splitlines()[-60:], sep="\n")


def answer_turns(server: FakeOpenAI, text: str) -> None:
    """Answer the person's turn with ``text``, whenever it comes; a memory flush (should
    the restart end a session, a background job racing the resumed turn) gets none."""

    def respond(body: dict[str, Any]) -> str:
        last = body["messages"][-1]
        return "" if last.get("content") == FLUSH_PROMPT else text

    server.responder(respond)


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()  # SIGKILL: no shutdown work of any kind
    proc.wait(timeout=10)


async def test_killed_mid_turn_the_message_is_answered_once_after_the_restart(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    server.reply("never delivered", delay=60)
    first = await gateway()  # type: ignore[misc]
    telegram.message("what is 6 times 7?", user_id=ANN)
    await telegram.wait_for(lambda: server.in_flight == 1, what="the answer in progress")
    await telegram.wait_for(lambda: not telegram.pending(), what="the update confirmed")
    kill(first)

    answer_turns(server, "Forty-two.")
    second = await gateway()  # type: ignore[misc]
    [answer] = await telegram.wait_messages(ANN, 1, timeout=30)
    assert answer.text == "Forty-two."
    # the kill comes once the answer is noted as given (a kill between the two gives it again)
    await telegram.wait_for(lambda: all_settled(chorus_home), what="the answer noted")
    kill(second)
    third = await gateway()  # type: ignore[misc]
    telegram.message("thanks", user_id=ANN)
    await telegram.wait_messages(ANN, 2, timeout=30)
    assert len(telegram.in_chat(ANN)) == 2  # "Forty-two." once, then the answer to "thanks"
    kill(third)


def all_settled(home: Path) -> bool:
    """Every delivery in the gateway's inbox is settled (answered, or its sender told)."""
    try:
        with sqlite3.connect(f"file:{ChorusPaths(home).state_db}?mode=ro", uri=True) as conn:
            [(unsettled,)] = conn.execute("SELECT count(*) FROM inbox WHERE settled_at IS NULL")
    except sqlite3.Error:
        return False
    return unsettled == 0


def shown_recorded(home: Path) -> bool:
    """The gateway has recorded which message the answer streams into (durably)."""
    try:
        with sqlite3.connect(f"file:{ChorusPaths(home).state_db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT shown FROM inbox WHERE shown IS NOT NULL").fetchall()
    except sqlite3.Error:
        return False
    return any(json.loads(row[0]) for row in rows)


async def test_a_half_streamed_answer_ends_with_the_final_text(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    server.stream_piece_delay = 0.3
    server.push(
        Reply.of_text("Six times seven is forty two, as it always was.", stall_after=6, stall=60)
    )
    first = await gateway()  # type: ignore[misc]
    telegram.message("what is 6 times 7?", user_id=ANN)
    await telegram.wait_for(lambda: len(telegram.in_chat(ANN)) == 1, what="the streamed start")
    frozen = telegram.in_chat(ANN)[0]
    assert frozen.text.startswith("Six")
    # A kill between Telegram taking the message and the gateway recording its id would
    # leave that message behind (nothing can ask Telegram for it); past that, it is resumed.
    await telegram.wait_for(lambda: shown_recorded(chorus_home), what="the message recorded")
    kill(first)

    server.stream_piece_delay = 0.0
    answer_turns(server, "Six times seven is 42.")
    second = await gateway()  # type: ignore[misc]
    await telegram.wait_for(
        lambda: telegram.in_chat(ANN)[0].text == "Six times seven is 42.",
        timeout=30,
        what="the final text",
    )
    assert [m.message_id for m in telegram.in_chat(ANN)] == [frozen.message_id]
    kill(second)


async def test_past_the_resume_age_the_sender_is_told_once(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    server.reply("never delivered", delay=60)
    first = await gateway()  # type: ignore[misc]
    telegram.message("are you there?", user_id=ANN)
    await telegram.wait_for(lambda: server.in_flight == 1, what="the answer in progress")
    kill(first)

    requests = len(server.requests)
    second = await gateway(CHORUS_SESSIONS__RESUME_PENDING_MINUTES="0")  # type: ignore[misc]
    [notice] = await telegram.wait_messages(ANN, 1, timeout=30)
    assert "restarted" in notice.text and "ask again" in notice.text
    # the kill comes once the notice is noted as given (a kill between the two tells again)
    await telegram.wait_for(lambda: all_settled(chorus_home), what="the notice noted")
    kill(second)
    third = await gateway(CHORUS_SESSIONS__RESUME_PENDING_MINUTES="0")  # type: ignore[misc]
    telegram.message("hello again", user_id=ANN)
    await telegram.wait_messages(ANN, 2, timeout=30)
    assert len(server.requests) == requests + 1  # the old one was never answered
    assert len(telegram.in_chat(ANN)) == 2  # told once
    kill(third)


async def test_an_update_handed_out_again_while_it_is_answered_is_not_dropped(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    """Telegram hands an update out again when no poll confirmed it (a process killed
    before its next poll). Was: the update known to the inbox was settled as one that
    needs no turn, though its answer was under way; after a restart it was neither
    answered nor its sender told."""
    server.reply("never delivered", delay=60)
    first = await gateway()  # type: ignore[misc]
    telegram.confirmations_lost = True
    telegram.message("are you there?", user_id=ANN)
    await telegram.wait_for(lambda: server.in_flight == 1, what="the answer in progress")
    polls = len(telegram.calls_of("getUpdates", status=None))
    await telegram.wait_for(
        lambda: len(telegram.calls_of("getUpdates", status=None)) >= polls + 2,
        what="the update handed out again and taken",
    )
    kill(first)

    # the restarted process is handed it again too, while it takes up what was left
    second = await gateway(CHORUS_SESSIONS__RESUME_PENDING_MINUTES="0")  # type: ignore[misc]
    [notice] = await telegram.wait_messages(ANN, 1, timeout=30)
    assert "restarted" in notice.text and "ask again" in notice.text
    telegram.confirmations_lost = False
    await telegram.wait_for(lambda: all_settled(chorus_home), what="the notice noted")
    kill(second)


async def test_past_the_resume_age_a_half_streamed_answer_becomes_the_notice(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    """Was: the "could not answer" notice as a new message, the half answer frozen above
    it (2 of 2)."""
    server.stream_piece_delay = 0.3
    server.push(Reply.of_text("Six times seven is forty two, as always.", stall_after=6, stall=60))
    first = await gateway()  # type: ignore[misc]
    telegram.message("what is 6 times 7?", user_id=ANN)
    await telegram.wait_for(lambda: len(telegram.in_chat(ANN)) == 1, what="the streamed start")
    frozen = telegram.in_chat(ANN)[0]
    await telegram.wait_for(lambda: shown_recorded(chorus_home), what="the message recorded")
    kill(first)

    server.stream_piece_delay = 0.0
    requests = len(server.requests)
    second = await gateway(CHORUS_SESSIONS__RESUME_PENDING_MINUTES="0")  # type: ignore[misc]
    await telegram.wait_for(
        lambda: "restarted" in telegram.in_chat(ANN)[0].text, timeout=30, what="the notice"
    )
    await telegram.wait_for(lambda: all_settled(chorus_home), what="the notice noted")
    assert [m.message_id for m in telegram.in_chat(ANN)] == [frozen.message_id]
    assert "forty" not in telegram.in_chat(ANN)[0].text
    assert len(server.requests) == requests  # not answered: too old
    kill(second)


def lock_state_db(home: Path) -> sqlite3.Connection:
    """Another writer holds ``state.db`` (a backup, an admin's CLI): the gateway's writes
    wait out their busy timeout, then fail with "database is locked"."""
    conn = sqlite3.connect(ChorusPaths(home).state_db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def transcript_roles(home: Path) -> list[str]:
    with sqlite3.connect(f"file:{ChorusPaths(home).state_db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT role FROM messages ORDER BY id").fetchall()
    return [role for (role,) in rows]


QUESTION = "what is 6 times 7?"
FIRST = "Six times seven is forty two, as it always was."


def asked(server: FakeOpenAI) -> int:
    """Requests that asked the model to answer the person's question."""
    return sum(1 for body in server.requests if body["messages"][-1].get("content") == QUESTION)


async def delivered_while_settle_is_locked(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, home: Path
) -> tuple[subprocess.Popen[bytes], sqlite3.Connection]:
    """The answer streams and is delivered; its settle meets a locked database.

    The streamed edits show a beginning of the answer; the edit to the whole of it (the
    final one) reaches Telegram and, before Telegram applies it, the database is locked.
    """
    server.stream_piece_delay = 0.3
    server.reply(FIRST)
    telegram.delays["editMessageText"] = 1.5  # the final edit lands after the lock is taken
    proc = await gateway()  # type: ignore[misc]
    telegram.message(QUESTION, user_id=ANN)

    def final_edit_sent() -> bool:
        calls = telegram.calls_of("editMessageText", status=None)
        return any(call.params.get("text") == FIRST for call in calls)

    await telegram.wait_for(final_edit_sent, timeout=30, what="the final edit")
    lock = lock_state_db(home)
    await telegram.wait_for(
        lambda: [m.text for m in telegram.in_chat(ANN)] == [FIRST], what="the answer delivered"
    )
    return proc, lock


async def test_killed_after_the_answer_was_delivered_it_is_not_answered_again(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    """Was: 1 of 14 answered twice after the restart (a second LLM call, the first answer
    edited into the second, the question and the answer twice in the transcript)."""
    first, lock = await delivered_while_settle_is_locked(gateway, server, telegram, chorus_home)
    kill(first)  # the settle is still waiting for the database
    lock.rollback()
    lock.close()
    assert not all_settled(chorus_home)

    telegram.delays.clear()
    answer_turns(server, "A second answer.")
    second = await gateway()  # type: ignore[misc]
    await telegram.wait_for(lambda: all_settled(chorus_home), timeout=30, what="the settle")
    [shown] = telegram.in_chat(ANN)
    assert shown.text == FIRST and "A second answer." not in shown.history
    assert asked(server) == 1
    assert transcript_roles(chorus_home).count("user") == 1
    assert transcript_roles(chorus_home).count("assistant") == 1
    kill(second)


async def test_a_settle_that_met_a_locked_database_is_retried(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    """Was: "database is locked" on the settle only a warning; the message stayed pending
    and a restart answered it again (1 of 3)."""
    first, lock = await delivered_while_settle_is_locked(gateway, server, telegram, chorus_home)
    await asyncio.sleep(6)  # past the gateway's busy timeout (5 s): its first settle failed
    lock.rollback()
    lock.close()
    await telegram.wait_for(lambda: all_settled(chorus_home), timeout=30, what="the settle")
    kill(first)

    telegram.delays.clear()
    answer_turns(server, "A second answer.")
    second = await gateway()  # type: ignore[misc]
    telegram.message("thanks", user_id=ANN)
    await telegram.wait_messages(ANN, 2, timeout=30)
    assert [m.text for m in telegram.in_chat(ANN)] == [FIRST, "A second answer."]
    assert asked(server) == 1
    kill(second)


async def test_a_model_connection_dropped_mid_answer_ends_the_message_with_one_note(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, tmp_path: Path
) -> None:
    """Was: the half answer frozen, a separate "something went wrong on my side" and a
    traceback in the log (httpx ``RemoteProtocolError``)."""
    server.stream_piece_delay = 0.3
    server.push(Reply.of_text("Six times seven is forty two, as it always was.", drop_after=7))
    proc = await gateway()  # type: ignore[misc]
    telegram.message(QUESTION, user_id=ANN)
    await telegram.wait_for(
        lambda: any("(cut off" in m.text for m in telegram.in_chat(ANN)),
        timeout=30,
        what="the note",
    )
    [shown] = telegram.in_chat(ANN)
    assert shown.text.startswith("Six times seven") and "went wrong" not in shown.text
    assert asked(server) == 1  # words were shown: not asked again
    kill(proc)
    assert "Traceback" not in (tmp_path / "gateway-0.log").read_text(errors="replace")


def shown_for(home: Path) -> int:
    """How many pending deliveries are noted as shown in some message."""
    try:
        with sqlite3.connect(f"file:{ChorusPaths(home).state_db}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "SELECT shown FROM inbox WHERE shown IS NOT NULL AND settled_at IS NULL"
            ).fetchall()
    except sqlite3.Error:
        return 0
    return sum(1 for (raw,) in rows if json.loads(raw))


async def test_killed_mid_answer_to_two_messages_each_keeps_its_answer(
    gateway: Callable[..., object], server: FakeOpenAI, telegram: FakeTelegram, chorus_home: Path
) -> None:
    """Was: after the restart the answer to the first was overwritten in place by the
    answer to the second (3 of 3)."""
    server.reply("First.", delay=2)
    # queued now: the merged turn may ask for its answer as soon as the first is out
    server.push(Reply.of_text("Two and three, answered together now.", stall_after=4, stall=60))
    server.stream_piece_delay = 0.3
    first = await gateway()  # type: ignore[misc]
    telegram.message("one", user_id=ANN)
    await telegram.wait_for(lambda: server.in_flight == 1, what="the first answer in progress")
    telegram.message("two", user_id=ANN)
    telegram.message("three", user_id=ANN)
    await telegram.wait_messages(ANN, 1, timeout=30)
    await telegram.wait_for(lambda: len(telegram.in_chat(ANN)) == 2, what="the merged start")
    frozen = telegram.in_chat(ANN)[1]
    await telegram.wait_for(lambda: shown_for(chorus_home) == 2, what="both noted as shown")
    kill(first)

    server.stream_piece_delay = 0.0

    def echo(body: dict[str, Any]) -> str:
        last = body["messages"][-1]
        return "" if last.get("content") == FLUSH_PROMPT else f"echo {last.get('content')}"

    server.responder(echo)
    second = await gateway()  # type: ignore[misc]
    await telegram.wait_for(lambda: all_settled(chorus_home), timeout=30, what="both answered")
    chat = telegram.in_chat(ANN)
    assert [m.text for m in chat] == ["First.", "echo two", "echo three"]
    assert chat[1].message_id == frozen.message_id  # the half answer finished in place
    assert "echo three" not in chat[1].history  # and never overwritten
    kill(second)

"""Shutdown under load: SIGTERM to a ``chorus gateway`` with N answers being written.

A real ``chorus gateway`` process polls the tests' fake Telegram Bot API and talks to
the fake OpenAI server, whose answers take ``--latency`` seconds (their first words
after a fifth of it, streamed, the rest at the end; every request is that slow, the
handoff summaries of the shutdown too). N people write; once N requests are in
flight at the LLM the process gets SIGTERM. What it should do (gateway/app/_service.py,
GatewayRunner.shutdown, SessionManager.shutdown): stop polling, let running turns
finish until ``gateway.shutdown_timeout`` less a reserve for ending sessions, stop
the rest (their messages stay in the durable inbox for the next start), end every
session (reason ``shutdown``; one not ended in time ends at the next start), exit 0,
all within ``gateway.shutdown_timeout``.

Reported: seconds from SIGTERM to exit against that timeout, the exit code, what
each user saw (the whole answer, part of it, a notice, nothing), the deliveries left
pending in the inbox and the sessions ended or left to end at the next start. Then,
unless ``--no-restart``, the gateway is started again with an instant LLM and what
the users got after the restart is reported the same way.

Run: uv run python bench/shutdown.py [--users 50] [--latency 30] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.flush import FLUSH_PROMPT  # noqa: E402
from agent.jobs import HANDOFF_PROMPT  # noqa: E402
from bench.burst import ANSWER, CHORUS, free_port, ready  # noqa: E402
from gateway import _texts as texts  # noqa: E402
from gateway.config import GatewaySettings  # noqa: E402
from gateway.sessions import Inbox  # noqa: E402
from memory.paths import ChorusPaths  # noqa: E402
from memory.transcripts import SessionDB  # noqa: E402
from tests.fakes import FakeOpenAI, Reply  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402

NOTICES = {
    texts.SHUTTING_DOWN: "shutting_down",
    texts.RESTARTED_UNANSWERED: "restarted_unanswered",
    texts.APOLOGY: "apology",
}


def kind_of(body: dict[str, Any]) -> str:
    """What an LLM request was for: a turn, a memory flush or a handoff summary."""
    last = str(body["messages"][-1].get("content") or "")
    if last.startswith(HANDOFF_PROMPT.split("{")[0]):
        return "handoff_summary"
    return "flush" if last == FLUSH_PROMPT else "turn"


def start(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [str(CHORUS), "gateway"], env=env, stdout=subprocess.DEVNULL, stderr=err
        )
    deadline = time.monotonic() + 60
    while not ready(port):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit(f"the gateway did not become ready:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return proc


def is_part(text: str) -> bool:
    """The first words of the answer (a "(stopped)" note after them or not)."""
    words = text.removesuffix(texts.STOPPED_NOTE).strip()
    return bool(words) and ANSWER.startswith(words)


def seen(telegram: FakeTelegram, chats: list[int]) -> dict[str, int]:
    """Per user, the best of what the chat shows: the answer, part of it, a notice, nothing."""
    kinds: Counter[str] = Counter()
    for chat in chats:
        shown = [m.text for m in telegram.in_chat(chat)]
        if ANSWER in shown:
            kinds["answer"] += 1
        elif any(is_part(text) for text in shown):
            kinds["partial"] += 1
        elif notices := [NOTICES.get(t, "other") for t in shown]:
            kinds[f"notice:{notices[-1]}"] += 1
        else:
            kinds["nothing"] += 1
    return dict(sorted(kinds.items()))


def leftovers(home: Path) -> dict[str, int]:
    """What the stopped process left for the next start, read from state.db."""
    path = ChorusPaths(home).state_db
    inbox = Inbox(path)
    pending = len(inbox.pending("telegram"))
    inbox.close()
    db = SessionDB(path)
    records = db.list_sessions(limit=100_000)
    db.close()
    return {
        "inbox_pending": pending,
        "sessions_ended": sum(1 for r in records if r.ended_at),
        "sessions_end_at_next_start": sum(1 for r in records if not r.ended_at and r.end_reason),
        "sessions_open": sum(1 for r in records if not r.ended_at and not r.end_reason),
    }


def warnings_of(log: Path) -> list[str]:
    lines = log.read_text(errors="replace").splitlines()
    return [line[-160:] for line in lines if "WARNING" in line or "ERROR" in line][:12]


def run(users: int, latency: float, timeout: float | None, restart: bool) -> dict[str, Any]:
    limit = timeout if timeout is not None else GatewaySettings().shutdown_timeout
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as llm, FakeTelegram() as telegram:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        log = Path(tmp) / "gateway.log"
        first_words = latency / 5
        llm.responder(
            lambda body: Reply.of_text(
                ANSWER, delay=first_words, stall_after=3, stall=latency - first_words
            )
        )
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
        env.update(
            {
                "CHORUS_HOME": str(home),
                "OPENAI_BASE_URL": llm.base_url,
                "TELEGRAM_BOT_TOKEN": telegram.token,
                "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
                "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
                "CHORUS_AUTH__POLICY": "open",
                "CHORUS_GATEWAY__HTTP__PORT": str(port),
                "CHORUS_LOG_LEVEL": "WARNING",
            }
        )
        if timeout is not None:
            env["CHORUS_GATEWAY__SHUTDOWN_TIMEOUT"] = str(timeout)
        proc = start(env, port, log)
        try:
            chats = [2_000_000 + n for n in range(users)]
            for chat in chats:
                telegram.message(f"hello from {chat}", user_id=chat)
            deadline = time.monotonic() + 60 + users
            while llm.in_flight < users or len(llm.requests) < users:  # bodies read too
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"only {llm.in_flight} of {users} requests reached the LLM")
                time.sleep(0.02)
            in_flight = llm.in_flight
            requests_before = len(llm.requests)
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=limit + 120)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            exit_s = time.monotonic() - signalled
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        report: dict[str, Any] = {
            "users": users,
            "llm_latency_s": latency,
            "shutdown_timeout_s": limit,
            "in_flight_at_sigterm": in_flight,
            "exit_s": round(exit_s, 2),
            "exit_code": code,
            "within_timeout": exit_s <= limit,
            "over_timeout_s": round(max(0.0, exit_s - limit), 2),
            "llm_requests_during_shutdown": dict(
                Counter(kind_of(body) for body in llm.requests[requests_before:])
            ),
            "users_saw": seen(telegram, chats),
            **leftovers(home),
            "warnings": warnings_of(log),
        }
        if restart:
            llm.responder(lambda body: ANSWER)
            log.write_text("")
            started = time.monotonic()
            proc = start(env, port, log)
            try:
                deadline = time.monotonic() + 60 + users
                while time.monotonic() < deadline:
                    saw = seen(telegram, chats)
                    if saw.get("nothing", 0) + saw.get("partial", 0) == 0:
                        break
                    time.sleep(0.1)
                settled_s = time.monotonic() - started
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=limit + 60)
            report["after_restart"] = {
                "users_saw": seen(telegram, chats),
                "seconds_from_start": round(settled_s, 2),
                **leftovers(home),
            }
    return report


def main() -> None:
    # the gateway goes away in the middle of the fake LLM's answers: that is the point here
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--latency", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, help="gateway.shutdown_timeout (default: its)")
    parser.add_argument("--no-restart", action="store_true")
    args = parser.parse_args()
    result = run(args.users, args.latency, args.timeout, not args.no_restart)
    width = max(len(k) for k in result)
    for key, value in result.items():
        if isinstance(value, list):
            print(f"{key:<{width}}  {len(value)}")
            for line in value:
                print(f"    {line}")
        else:
            print(f"{key:<{width}}  {value}")
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / "shutdown.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

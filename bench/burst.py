"""A burst: N people write to the bot at once on Telegram; how soon are all answered?

A real ``chorus gateway`` process polls the tests' fake Telegram Bot API and talks to
the fake OpenAI server, whose answers take ``--latency`` seconds (their first words
after a fifth of it, streamed, the rest at the end). Telegram lets a bot send about
30 messages a second in all, so N replies cannot all land sooner than N / 30
seconds: the *floor*. Reported: when the last and the first final answer landed
(from the moment the N messages were there to fetch), when the first and the tenth
request reached the model, the floor and the ratio,
Telegram calls per reply, and the gateway's CPU time per turn.

A burst is one event, and the first answer's time swings with what else the host
does in that second (1.03 to 1.16 s over ten runs of the same code), so the burst
is run ``--runs`` times, each with a fresh gateway: each figure printed is the
median over the runs, each run's own beside it (``runs``).

Run: uv run python bench/burst.py [--users 200] [--latency 1.0] [--no-streaming] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import FakeOpenAI, Reply  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402

CHORUS = Path(sys.executable).with_name("chorus")
TELEGRAM_RATE = 30.0
ANSWER = (
    "Here is a considered answer with a few sentences in it, long enough to be streamed "
    "in pieces the way a model writes, and then completed in one final form."
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Landings:
    """When each chat first showed the whole answer (a send or an edit), read from the
    fake Telegram's calls as they come: each call is looked at once. (Scanning every call
    for every chat at each poll held the GIL of this process, which also runs the fake
    servers, for tens of milliseconds: the servers answered late and the figures with them.)"""

    def __init__(self, telegram: FakeTelegram) -> None:
        self._telegram = telegram
        self._seen = 0
        self.at: dict[str, float] = {}

    def update(self) -> None:
        calls = self._telegram.calls[self._seen :]
        self._seen += len(calls)
        for call in calls:
            if call.status != 200 or call.method not in ("sendMessage", "editMessageText"):
                continue
            if call.params.get("text") == ANSWER:
                self.at.setdefault(str(call.params.get("chat_id")), call.at)


def gateway_command(profile: Path | None) -> list[str]:
    if profile is None:
        return [str(CHORUS), "gateway"]
    code = (
        "import cProfile, sys; sys.argv = ['chorus', 'gateway']; "
        "from gateway.cli._app import main; "
        f"cProfile.run('main()', {str(profile)!r})"
    )
    return [sys.executable, "-c", code]


def run(users: int, latency: float, streaming: bool, profile: Path | None = None) -> dict[str, Any]:
    first_words, rest = latency / 5, latency - latency / 5
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as llm, FakeTelegram() as telegram:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        asked: list[float] = []  # when each request reached the model

        def answer(body: dict[str, Any]) -> Reply:
            asked.append(time.monotonic())
            return Reply.of_text(ANSWER, delay=first_words, stall_after=3, stall=rest)

        llm.responder(answer)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
        env.update(
            {
                "CHORUS_HOME": str(home),
                "OPENAI_BASE_URL": llm.base_url,
                "TELEGRAM_BOT_TOKEN": telegram.token,
                "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
                "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
                "CHORUS_TELEGRAM__STREAMING": "true" if streaming else "false",
                "CHORUS_AUTH__POLICY": "open",
                "CHORUS_SESSIONS__HANDOFF": "false",
                "CHORUS_GATEWAY__HTTP__PORT": str(port),
                "CHORUS_LOG_LEVEL": "WARNING",
            }
        )
        proc = subprocess.Popen(gateway_command(profile), env=env, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not ready(port):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the gateway did not become ready")
                time.sleep(0.05)
            chats = [1_000_000 + n for n in range(users)]
            cpu_before = cpu_seconds(proc.pid)
            with telegram.at_once():  # all N there to fetch at one moment
                for chat in chats:
                    telegram.message(f"hello from {chat}", user_id=chat)
            start = time.monotonic()
            deadline = time.monotonic() + 120 + users
            landings = Landings(telegram)
            asked_by = {str(chat) for chat in chats}
            while len(asked_by & landings.at.keys()) < users and time.monotonic() < deadline:
                time.sleep(0.1)
                landings.update()
            landed = {chat: at for chat, at in landings.at.items() if chat in asked_by}
            cpu = cpu_seconds(proc.pid) - cpu_before
            sends = len(telegram.calls_of("sendMessage"))
            edits = len(telegram.calls_of("editMessageText"))
            typing = len(telegram.calls_of("sendChatAction"))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    times = sorted(at - start for at in landed.values())
    floor = users / TELEGRAM_RATE
    return {
        "users": users,
        "llm_latency_s": latency,
        "streaming": streaming,
        "answered": len(times),
        "all_replies_s": round(times[-1], 2) if len(times) == users else None,
        "first_reply_s": round(times[0], 3) if times else None,
        "first_request_s": round(min(asked) - start, 3) if asked else None,
        "tenth_request_s": round(sorted(asked)[9] - start, 3) if len(asked) >= 10 else None,
        "floor_s": round(floor, 2),
        "ratio_to_floor": round(times[-1] / floor, 2) if len(times) == users else None,
        "send_message": sends,
        "edit_message_text": edits,
        "send_chat_action": typing,
        "calls_per_reply": round((sends + edits) / users, 2),
        "gateway_cpu_ms_per_turn": round(cpu * 1000 / users, 2),
    }


RUN_FIGURES = ("first_reply_s", "first_request_s", "tenth_request_s", "all_replies_s")
"""What each run's line shows beside the median."""


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs as one: each number the median over the runs (None when a run has
    none: not every person answered), the fewest answered; each run's own kept."""
    result: dict[str, Any] = dict(runs[0])
    for key, value in runs[0].items():
        values = [r[key] for r in runs]
        if key == "answered":
            result[key] = min(values)
        elif isinstance(value, bool) or key in ("users", "llm_latency_s", "floor_s"):
            continue
        elif all(isinstance(v, (int, float)) for v in values):
            result[key] = round(statistics.median(values), 3)
        else:
            result[key] = None
    result["runs"] = [
        {key: r[key] for key in (*RUN_FIGURES, "gateway_cpu_ms_per_turn")} for r in runs
    ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--runs", type=int, default=3, help="bursts, each a fresh gateway")
    parser.add_argument(
        "--profile", type=Path, help="write the gateway's cProfile stats here (the last run's)"
    )
    args = parser.parse_args()
    if args.runs < 1 or args.users < 1:
        parser.error("--runs and --users must be at least 1")
    runs = []
    for n in range(args.runs):
        one = run(args.users, args.latency, not args.no_streaming, args.profile)
        print(f"run {n + 1}: " + ", ".join(f"{k} {one[k]}" for k in RUN_FIGURES), flush=True)
        runs.append(one)
    result = combined(runs)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / "burst.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""The real OpenViking server (``openviking-server`` from ``.real-servers/``) for tests.

:class:`RealOpenViking` runs it on a free 127.0.0.1 port with everything it
writes (``ov.conf``, the ``storage.workspace``, ``HOME``, its log) in one
``tempfile.mkdtemp`` directory, so a restart (:meth:`~RealOpenViking.kill`
then :meth:`~RealOpenViking.start`) finds its data again. It runs in
``server.auth_mode = "trusted"`` with a ``root_api_key``: the only mode of
OpenViking 0.5.2 in which one key may name the user of each request
(``X-OpenViking-Account`` / ``X-OpenViking-User``), which chorus does. (In
``api_key`` mode the server strips those headers and refuses a ROOT key on
every data route.)

Its embedding model and its VLM are a :class:`~tests.fakes.openai_server.FakeOpenAI`:
``/v1/embeddings`` is deterministic (a hashed bag of words, so texts sharing
words are close). OpenViking sends no ``dimensions`` to a provider ``openai``
and cuts longer vectors to the configured ``dimension``, so the fake is told
that size. :class:`MemoryLLM` is the fake's responder: OpenViking's memory
extraction prompt asks for a "restricted Python memory SDK" program, and it
answers one ``sdk.create_events(...)`` per user message of the conversation,
whose summary is that message's text; any other prompt gets a short text.
It records every conversation it was asked to extract, and ``delay`` makes
it answer late (to kill the server while a commit's extraction runs).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.openai_server import FakeOpenAI, Reply

ROOT_KEY = "chorus-real-openviking-root-key"
ACCOUNT = "default"
DIMENSION = 256
STARTUP_TIMEOUT = 180.0
EXTRACTION_PROMPT = "memory extraction and maintenance agent"
_HISTORY_LINE = re.compile(r"^\[(\d+)\]\[(user|assistant)\]\[[^\]]*\]: (.*)$", re.MULTILINE)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _literal(text: str) -> str:
    """``text`` as the body of a triple-quoted string of the memory SDK."""
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


class MemoryLLM:
    """The FakeOpenAI responder that plays OpenViking's VLM (see the module docstring)."""

    def __init__(self) -> None:
        self.conversations: list[list[tuple[str, str]]] = []
        """The ``(role, text)`` messages of each extraction request, in order."""
        self.delay = 0.0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        messages = body.get("messages") or []
        system = messages[0].get("content") if messages else ""
        if not isinstance(system, str) or EXTRACTION_PROMPT not in system:
            return "A short summary."
        history = next(
            (
                m["content"]
                for m in messages
                if isinstance(m.get("content"), str) and "## Conversation History" in m["content"]
            ),
            "",
        )
        lines = _HISTORY_LINE.findall(history)
        with self._lock:
            self.conversations.append([(role, text) for _, role, text in lines])
            delay = self.delay
        calls = []
        for index, role, text in lines:
            if role != "user":
                continue
            name = "_".join(re.findall(r"[a-z]+", text.lower())[:3]) or "note"
            calls.append(
                f'sdk.create_events(event_name="""{name}""", goal="""remember a fact""", '
                f'summary="""{_literal(text)}""", ranges="""{index}""")'
            )
        calls.append("sdk.commit()")
        return Reply.of_text("\n".join(calls), delay=delay)

    def extracted(self, text: str) -> int:
        """How many extraction requests contained a message with exactly ``text``."""
        with self._lock:
            return sum(1 for c in self.conversations if any(t == text for _, t in c))


class RealOpenViking:
    """One ``openviking-server`` process (restartable on the same port and data)."""

    def __init__(self, executable: Path, llm: FakeOpenAI, *, root_key: str = ROOT_KEY) -> None:
        self.executable = executable
        self.root_key = root_key
        self.dir = Path(tempfile.mkdtemp(prefix="chorus-openviking-"))
        self.port = free_port()
        self.log_path = self.dir / "server.log"
        self.startup_seconds: list[float] = []
        self.process: subprocess.Popen[bytes] | None = None
        llm.embedding_dimensions = DIMENSION
        model = {"provider": "openai", "api_key": "sk-fake", "api_base": llm.base_url}
        config: dict[str, Any] = {
            "storage": {"workspace": str(self.dir / "workspace")},
            "embedding": {
                "dense": {**model, "model": "text-embedding-3-small", "dimension": DIMENSION}
            },
            "vlm": {**model, "model": llm.model, "max_retries": 1},
            "log": {"level": "INFO"},
            "server": {
                "host": "127.0.0.1",
                "port": self.port,
                "auth_mode": "trusted",
                "root_api_key": root_key,
            },
        }
        self.config = config
        self.config_path = self.dir / "ov.conf"
        self.config_path.write_text(json.dumps(config, indent=2))
        (self.dir / "home").mkdir()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the process -----------------------------------------------------------

    def start(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Start the server; wait until ``GET /health`` answers (time kept in startup_seconds)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("the OpenViking server is already running")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENVIKING", "OPENAI"))}
        env.update(HOME=str(self.dir / "home"), PYTHONUNBUFFERED="1", NO_PROXY="127.0.0.1")
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [str(self.executable), "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                env=env,
                start_new_session=True,
            )
        deadline = started + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"openviking-server exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"openviking-server was not healthy in {timeout:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.2)
        self.startup_seconds.append(time.monotonic() - started)

    def _signal(self, sig: int) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)  # its own session: the server and any child

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would: nothing is flushed or finished."""
        process = self.process
        if process is None:
            return
        self._signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM and wait (SIGKILL after ``timeout``)."""
        process = self.process
        if process is None:
            return
        self._signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def reconfigure(self, **server: Any) -> None:
        """Change keys of ``ov.conf``'s ``server`` section and restart (same port and data)."""
        self.config["server"].update(server)
        self.config_path.write_text(json.dumps(self.config, indent=2))
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def failure_log(self) -> str:
        """What tests/real_servers/conftest.py shows when a test using this server fails."""
        return f"{self.log_path}:\n{self.log_tail()}"

    def log_tail(self, lines: int = 150) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- direct API calls, to look at what chorus did ---------------------------

    def call(
        self,
        user: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        timeout: float = 60.0,
        key: str | None = None,
    ) -> Any:
        """The ``result`` of one ``/api/v1`` request as ``user`` (with ``key``, the root
        key by default); AssertionError unless ok."""
        headers = {
            "X-API-Key": key or self.root_key,
            "X-OpenViking-Account": ACCOUNT,
            "X-OpenViking-User": user,
        }
        response = httpx.request(
            method,
            f"{self.base_url}{path}",
            json=json,
            params=params,
            headers=headers,
            timeout=timeout,
        )
        body = response.json()
        if response.status_code != 200 or body.get("status") != "ok":
            raise AssertionError(f"{method} {path} as {user}: {response.status_code} {body}")
        return body.get("result")

    def settle(self, user: str, timeout: float = 90.0) -> list[dict[str, Any]]:
        """Wait until every session commit of ``user`` has finished (memories extracted
        and indexed); returns those tasks. AssertionError if one failed or time ran out."""
        deadline = time.monotonic() + timeout
        while True:
            tasks = self.call(
                user, "GET", "/api/v1/tasks", params={"task_type": "session_commit", "limit": 200}
            )
            busy = [t for t in tasks if t["status"] in ("pending", "running", "cancelling")]
            if not busy:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"commits of {user} still running: {busy}")
            time.sleep(0.2)
        failed = [t for t in tasks if t["status"] != "completed"]
        assert not failed, f"commits of {user} failed: {failed}"
        self.call(user, "POST", "/api/v1/system/wait", timeout=timeout)
        return list(tasks)

    def session(self, user: str, session_id: str) -> dict[str, Any]:
        meta: dict[str, Any] = self.call(user, "GET", f"/api/v1/sessions/{session_id}")
        return meta

    def archived(self, user: str, session_id: str) -> list[tuple[str, str]]:
        """The ``(role, text)`` of every message archived by the commits of a session."""
        meta = self.session(user, session_id)
        messages: list[tuple[str, str]] = []
        for index in range(1, int(meta["commit_count"]) + 1):
            archive = self.call(
                user, "GET", f"/api/v1/sessions/{session_id}/archives/archive_{index:03d}"
            )
            for message in archive["messages"]:
                text = "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")
                messages.append((message["role"], text))
        return messages

    def memory_files(self, user: str) -> dict[str, str]:
        """Every memory file of ``user``'s own space (``uri -> text``), the agent's own
        ``soul.md``/``identity.md`` and directory summaries left out."""
        found: dict[str, str] = {}
        folders = [f"viking://user/{user}/memories"]
        while folders:  # ls (even recursive) and tree stop at three levels: walk it
            try:
                entries = self.call(user, "GET", "/api/v1/fs/ls", params={"uri": folders.pop()})
            except AssertionError:
                continue
            for entry in entries:
                uri = str(entry.get("uri", ""))
                name = uri.rsplit("/", 1)[-1]
                if entry.get("isDir"):
                    folders.append(uri)
                elif not name.startswith(".") and name not in ("soul.md", "identity.md"):
                    found[uri] = str(
                        self.call(user, "GET", "/api/v1/content/read", params={"uri": uri})
                    )
        return found

    def user_key(self, user: str) -> str:
        """A USER-role API key of ``user`` in the account ``default`` (``api_key`` mode)."""
        admin = {"X-API-Key": self.root_key}
        base = f"{self.base_url}/api/v1/admin/accounts"
        account = httpx.post(
            base, json={"account_id": ACCOUNT, "admin_user_id": "admin"}, headers=admin, timeout=30
        )
        assert account.status_code in (200, 409) or "exist" in account.text, account.text
        made = httpx.post(
            f"{base}/{ACCOUNT}/users",
            json={"user_id": user, "role": "user"},
            headers=admin,
            timeout=30,
        )
        body = made.json()
        assert body.get("status") == "ok", body
        return str(body["result"]["user_key"])

"""The real Hindsight server (``hindsight-api`` from ``.real-servers/hindsight``) for tests.

:class:`HindsightServer` runs ``hindsight-api`` on a free 127.0.0.1 port with
its embedded PostgreSQL (pg0, with pgvector) in a fresh temp directory, the
built-in API-key tenant extension (so a request without the right
``Authorization: Bearer`` is refused) and no reranker model (``rrf``: the
fused ranking as it is, nothing to download). PostgreSQL's ``initdb`` refuses
root, so as root the server runs as ``nobody`` (``setpriv``) with that
directory as its ``HOME``, where pg0 unpacks PostgreSQL and keeps the cluster.

Its LLM and embeddings are a :class:`~tests.fakes.openai_server.FakeOpenAI`
answered by :class:`HindsightLLM`, which plays the parts Hindsight asks of a
model: fact extraction (one fact per ``User:`` line of the retained text, as
the JSON of its ``FactExtractionResponse``), the reflect agent (``recall`` the
question, then ``done`` with what came back), and a plain answer to anything
else (the start-up check). Embeddings are the fake's hashed bag of words, so a
question is near the facts that share its words.

    with FakeOpenAI() as llm, HindsightServer(executable, llm) as server:
        ...  # server.base_url, server.api_key; server.memories(bank) looks into a bank

``stop()`` sends SIGTERM (Hindsight stops pg0 itself), waits, and stops the pg0
instance by its name as a fallback; the directory is removed. :meth:`log`
is the server's output, for a failing test to show.
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
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply, ToolCall

UNPRIVILEGED = 65534
"""``nobody``/``nogroup``: who the server and its PostgreSQL run as when the tests run as root."""
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
API_KEY = "hs-real-test-key"
PG0_INSTANCE = "chorus-test"
EMBEDDING_DIMENSIONS = 384


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the model Hindsight talks to ---------------------------------------------

_CONTENT = re.compile(r"^Content:\n(?P<text>.*)\Z", re.S | re.M)
_NAMES = re.compile(r"\b[A-Z][a-z]+\b")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def extracted_facts(text: str) -> list[str]:
    """What the fake model extracts from a retained text: each ``User:`` line, else each line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line.removeprefix("User:").strip() for line in lines if line.startswith("User:")]
    return said if said else [line for line in lines if not line.startswith("Assistant:")]


def _recalled(tool_result: str) -> list[str]:
    """The texts of the memories (and observations) in the result of a reflect tool."""
    try:
        data = json.loads(tool_result)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    items = [*(data.get("memories") or []), *(data.get("observations") or [])]
    return [str(item["text"]) for item in items if isinstance(item, dict) and item.get("text")]


class HindsightLLM:
    """The FakeOpenAI responder for Hindsight's prompts; ``calls`` counts each kind answered."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.unknown: list[dict[str, Any]] = []
        self.extraction_fails = False
        """While True, every fact extraction is answered 500 (the model is down)."""
        self._lock = threading.Lock()

    def _count(self, kind: str) -> None:
        with self._lock:
            self.calls[kind] = self.calls.get(kind, 0) + 1

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        if body.get("tools"):
            return self._agent(body, messages)
        system = " ".join(_text(m) for m in messages if m.get("role") == "system")
        user = _text(messages[-1]) if messages else ""
        if "Extract facts from the following chunk" in user or system.startswith("Extract"):
            if self.extraction_fails:
                self._count("extract-failed")
                return Reply.of_error(500, "the model is down")
            self._count("extract")
            return self._extract(user)
        if "memory consolidation system" in system:
            self._count("consolidate")  # nothing durable beyond the facts themselves
            return json.dumps({"creates": [], "updates": [], "deletes": []})
        if body.get("response_format"):
            self._count("other-json")
            with self._lock:
                self.unknown.append(body)
            return "{}"
        self._count("text")
        return "ok"

    def _extract(self, user: str) -> str:
        found = _CONTENT.search(user)
        facts = []
        for what in extracted_facts(found.group("text") if found else ""):
            names = [n for n in dict.fromkeys(_NAMES.findall(what)) if n not in ("My", "I")]
            facts.append(
                {
                    "what": what,
                    "when": "N/A",
                    "where": "N/A",
                    "who": "user",
                    "why": "N/A",
                    "fact_kind": "conversation",
                    "fact_type": "world",
                    "entities": ["user", *names],
                }
            )
        return json.dumps({"facts": facts})

    def _agent(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> Reply:
        """The reflect loop: ``recall`` the question first, then ``done`` with what it returned."""
        tools = [t["function"]["name"] for t in body["tools"] if isinstance(t, dict)]
        results = [_text(m) for m in messages if m.get("role") == "tool"]
        question = next((_text(m) for m in messages if m.get("role") == "user"), "")
        if "recall" in tools and not results and len(tools) > 1:
            self._count("reflect-recall")
            call = ToolCall("recall", json.dumps({"reason": "look it up", "query": question}))
            return Reply.of_tool_calls([call])
        if "done" in tools:
            self._count("reflect-done")
            texts = [text for result in results for text in _recalled(result)]
            answer = "From what I remember: " + ("; ".join(texts) if texts else "nothing yet.")
            args = {"answer": answer, "answer_found": bool(texts), "memory_ids": []}
            return Reply.of_tool_calls([ToolCall("done", json.dumps(args))])
        if len(tools) == 1:  # a step Hindsight forces (search_observations, ...): run it as asked
            self._count(f"reflect-{tools[0]}")
            args = {"reason": "look it up", "query": question}
            return Reply.of_tool_calls([ToolCall(tools[0], json.dumps(args))])
        self._count("agent-other")
        with self._lock:
            self.unknown.append(body)
        return Reply.of_tool_calls([ToolCall("done", json.dumps({"answer": "?"}))])


# -- the server ------------------------------------------------------------------


class HindsightServer:
    """One ``hindsight-api`` process with its own pg0 cluster; see the module docstring."""

    def __init__(self, executable: Path, llm: FakeOpenAI, *, api_key: str = API_KEY) -> None:
        self.executable = executable
        self.llm = llm
        self.api_key = api_key
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.startup_seconds = 0.0
        self._pg_port = _free_port()
        self._as_root = os.geteuid() == 0
        self._root: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- environment ---------------------------------------------------------

    def _env(self, root: Path) -> dict[str, str]:
        llm = self.llm.base_url
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "TMPDIR": str(root / "tmp"),
            "LC_ALL": "C.UTF-8",
            # nothing from outside: litellm's price list and Hugging Face stay local
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_OFFLINE": "1",
            "HINDSIGHT_API_HOST": "127.0.0.1",
            "HINDSIGHT_API_PORT": str(self.port),
            "HINDSIGHT_API_LOG_LEVEL": "info",
            "HINDSIGHT_API_DATABASE_URL": f"pg0://{PG0_INSTANCE}:{self._pg_port}",
            "HINDSIGHT_API_WORKER_ID": "chorus-test",
            "HINDSIGHT_API_LLM_PROVIDER": "openai",
            "HINDSIGHT_API_LLM_BASE_URL": llm,
            "HINDSIGHT_API_LLM_API_KEY": "fake-llm-key",
            "HINDSIGHT_API_LLM_MODEL": "fake-model",
            "HINDSIGHT_API_LLM_MAX_RETRIES": "1",
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": llm,
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "fake-llm-key",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "fake-embedding",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
            "HINDSIGHT_API_MCP_ENABLED": "false",
            "HINDSIGHT_API_TENANT_EXTENSION": (
                "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension"
            ),
            "HINDSIGHT_API_TENANT_API_KEY": self.api_key,
        }

    def _argv(self, *command: str) -> list[str]:
        if not self._as_root:
            return list(command)
        return [
            "setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
            *command,
        ]  # fmt: skip

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> HindsightServer:
        """Start the server and wait for ``/health``; RuntimeError (with its log) if it fails.

        After ``stop(keep=True)`` it starts again on the same data, port and log.
        """
        if self.running:
            raise RuntimeError("hindsight-api is already running")
        if self._root is None:
            root = Path(tempfile.mkdtemp(prefix="chorus-hindsight-"))
            (root / "tmp").mkdir()
            if self._as_root:
                for one in (root, root / "tmp"):
                    os.chown(one, UNPRIVILEGED, UNPRIVILEGED)
                for one in root.parents:  # nobody must be able to reach it
                    if one != Path("/") and not one.stat().st_mode & 0o001:
                        one.chmod(one.stat().st_mode | 0o001)
            self._root = root
        root = self._root
        began = time.monotonic()
        with (root / "server.log").open("ab") as log:
            self._proc = subprocess.Popen(
                self._argv(str(self.executable)),
                env=self._env(root),
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_healthy(began + START_TIMEOUT)
        except BaseException:
            self.stop(keep=True)
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _wait_healthy(self, deadline: float) -> None:
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"hindsight-api exited with {self._proc.returncode} before it was healthy:\n"
                    + self.log()[-6000:]
                )
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(f"{self.base_url}/health", timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.25)
        raise RuntimeError(
            f"hindsight-api was not healthy after {START_TIMEOUT:.0f} s:\n" + self.log()[-6000:]
        )

    # -- looking into the server (its own API, as an operator would) -----------

    def get(self, path: str, **query: str) -> Any:
        """``GET path`` on the server with its API key: the decoded JSON (HTTPError otherwise)."""
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.api_key}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def memories(self, bank: str) -> list[str]:
        """The text of every memory unit in ``bank`` (``[]`` for a bank it does not have)."""
        try:
            listed = self.get(f"/v1/default/banks/{bank}/memories/list", limit="1000")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise
        return sorted(str(item["text"]) for item in listed["items"])

    def documents(self, bank: str) -> list[str]:
        """The ids of the documents in ``bank``."""
        listed = self.get(f"/v1/default/banks/{bank}/documents", limit="1000")
        return sorted(str(item["id"]) for item in listed["items"])

    def banks(self) -> list[str]:
        return sorted(str(bank["bank_id"]) for bank in self.get("/v1/default/banks")["banks"])

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log(self) -> str:
        """The server's output so far ("" once it is removed)."""
        if self._root is None:
            return ""
        path = self._root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def failure_log(self, lines: int = 150) -> str:
        """The end of :meth:`log`, which a failing test shows (tests/real_servers/conftest.py)."""
        return "\n".join(self.log().splitlines()[-lines:])

    def stop(self, *, keep: bool = False) -> None:
        """Stop the server and its PostgreSQL; remove the directory unless ``keep``."""
        proc, root = self._proc, self._root
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self._proc = None
        if root is not None:
            self._stop_pg0(root)
            if not keep:
                shutil.rmtree(root, ignore_errors=True)
                self._root = None

    def _pg0(self, root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
        """``pg0 <args>`` on this server's instance, as the server's user (None: no instance)."""
        venv = self.executable.parent.parent
        pg0 = next(venv.glob("lib/python*/site-packages/pg0/bin/pg0"), None)
        if pg0 is None or not (root / ".pg0").exists():
            return None
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root)}
        return subprocess.run(
            self._argv(str(pg0), *args, "--name", PG0_INSTANCE),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def _stop_pg0(self, root: Path) -> None:
        """``pg0 stop`` (a no-op when Hindsight already stopped its PostgreSQL, as it does)."""
        self._pg0(root, "stop")

    def database_running(self) -> bool:
        """Whether this server's PostgreSQL (pg0) is running."""
        done = None if self._root is None else self._pg0(self._root, "info", "-o", "json")
        if done is None or done.returncode != 0:
            return False
        return bool(json.loads(done.stdout).get("running"))

    def __enter__(self) -> HindsightServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

"""The real ``brv`` CLI (byterover-cli 3.14.0 from ``.real-servers/``) for tests.

brv is a client of a daemon of its own: the first run starts
``brv-server.js`` detached (its own session), which starts one
``agent-process.js`` per project (working directory) it is asked about, and
every run talks to it over a local socket. :class:`RealBrv` keeps all it
writes (``HOME``, the XDG directories, ``BRV_DATA_DIR`` with the daemon's
``daemon.json``, logs, provider keys and per-project data) in one
``tempfile.mkdtemp`` directory; the context trees are in the projects
(``<cwd>/.brv/context-tree/``). :meth:`RealBrv.close` stops the daemon and
kills whatever is left that carries its ``BRV_DATA_DIR``, so no process
outlives the tests.

Offline: ByteRover's cloud URLs (``BRV_IAM_BASE_URL`` and the rest, which
``bin/run.js`` would read from the package's ``.env.production``) point at
the FakeOpenAI, so the daemon's OIDC discovery gets a 404 there and carries
on (a refused connection would stop it: "Unable to connect to ByteRover
servers"); the oclif auto-update and the npm update check are off. The LLM is
the FakeOpenAI too, connected as brv's ``openai-compatible`` provider, with
:class:`BrvLLM` as its responder: it answers brv's curate task with a
``code_exec`` program that UPSERTs the curated text (brv's sandbox variable)
as a note, and brv's query task with one that reads the notes brv's search
matched and returns them with ``setFinalResult``. ``fail`` makes the LLM
refuse those tasks (HTTP 401), ``hang`` makes it keep them waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply, ToolCall
from tests.real_servers.openviking_server import free_port

API_KEY = "sk-chorus-real-brv"
MODEL = "fake-model"
HANG_SECONDS = 120.0
STOP_TIMEOUT = 20.0
CLOUD_URLS = (
    "BRV_IAM_BASE_URL",
    "BRV_COGIT_BASE_URL",
    "BRV_BILLING_BASE_URL",
    "BRV_GIT_REMOTE_BASE_URL",
    "BRV_LLM_BASE_URL",
    "BRV_WEB_APP_URL",
)
NOTE_ENDINGS = (".abstract.md", ".overview.md")
_CURATE = re.compile(r"Context variable: (__curate_ctx_(\w+))")
_QUERY = re.compile(r"(__query_results_\w+)")
_FILE = re.compile(r'<file path="([^"]+)">')

CURATE_CODE = """// Curate the conversation into people/notes
(async () => {
  const text = CONTEXT;
  const result = await tools.curate([{
    type: 'UPSERT', path: 'people/notes', title: 'Note TASK',
    reason: 'Keep what the conversation established',
    summary: text.slice(0, 120),
    content: { narrative: { structure: text } },
    domainContext: { purpose: 'What is known about the person', scope: { included: ['people'] } },
    topicContext: { overview: 'Notes about the person' },
  }]);
  setFinalResult('Curated: ' + JSON.stringify(result.summary));
})()
"""
QUERY_CODE = """// Read the notes the search matched
(async () => {
  const hits = RESULTS.filter(r => r.symbolKind === 'context').slice(0, 3);
  const read = hits.map(async r => (await tools.readFile('.brv/context-tree/' + r.path)).content);
  const notes = await Promise.all(read);
  setFinalResult(notes.length ? notes.join('\\n---\\n') : 'This topic is not covered.');
})()
"""


def _prompt(messages: list[Any]) -> str:
    """The text of the first user message (brv puts its task there)."""
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _code(code: str) -> Reply:
    return Reply.of_tool_calls([ToolCall("code_exec", json.dumps({"code": code}))])


class BrvLLM:
    """The FakeOpenAI responder that plays brv's LLM (see the module docstring)."""

    def __init__(self) -> None:
        self.tasks: list[str] = []
        """``"curate"`` or ``"query"`` for each task brv brought to the LLM, in order."""
        self.fail = False
        self.hang = False
        self.hung_clients: list[int] = []
        """The pids of the brv runs waiting when a task was kept hanging."""
        self.brv: RealBrv | None = None
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        messages = body.get("messages") or []
        if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "tool":
            return "Done."  # the program ran; brv has its result
        prompt = _prompt(messages)
        curate, query = _CURATE.search(prompt), _QUERY.search(prompt)
        if curate or query:
            with self._lock:
                self.tasks.append("curate" if curate else "query")
            if self.fail:
                return Reply.of_error(401, "Incorrect API key provided.", code="invalid_api_key")
            if self.hang:
                if self.brv is not None:
                    self.hung_clients.extend(self.brv.clients())
                return Reply.of_hang(HANG_SECONDS)
        if curate:
            return _code(CURATE_CODE.replace("CONTEXT", curate[1]).replace("TASK", curate[2][:8]))
        if query:
            return _code(QUERY_CODE.replace("RESULTS", query[1]))
        for asked, tag in (("ONE-LINE summary", "abstract"), ("structured overview", "overview")):
            if asked in prompt:  # brv's summaries of a note it wrote
                files = _FILE.findall(prompt)
                return "".join(f'<file path="{p}"><{tag}>A note.</{tag}></file>' for p in files)
        return "ok"


def _pids_with(variable: str) -> list[int]:
    """The pids of this user's processes whose environment has ``variable`` (``NAME=value``)."""
    wanted = variable.encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == os.getuid() and wanted in (entry / "environ").read_bytes():
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] != "Z"


class RealBrv:
    """The real brv with its daemon, offline, all in one temporary directory."""

    def __init__(self, executable: Path, llm: FakeOpenAI) -> None:
        self.executable = executable
        self.llm = llm
        self.root = Path(tempfile.mkdtemp(prefix="chorus-real-brv-"))
        self.data_dir = self.root / "data"
        self.home = self.root / "home"
        self.home.mkdir()
        self.webui_port = free_port()

    def environ(self) -> dict[str, str]:
        """What every brv run of these tests has in its environment (chorus's too)."""
        origin = self.llm.base_url.rsplit("/v1", 1)[0]
        env = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "BRV_DATA_DIR": str(self.data_dir),
            "BRV_WEBUI_PORT": str(self.webui_port),
            "BRV_DISABLE_AUTOUPDATE": "1",
            "NO_UPDATE_NOTIFIER": "1",
        }
        env.update(dict.fromkeys(CLOUD_URLS, origin))
        return env

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 90.0) -> dict[str, Any]:
        """The ``data`` of brv's last JSON line to ``brv <args> --format json`` (a success)."""
        directory = cwd or self.root / "setup"
        directory.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [str(self.executable), *args, "--format", "json"],
            cwd=directory,
            env={**os.environ, **self.environ()},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        last = json.loads(lines[-1]) if lines else {}
        assert done.returncode == 0 and last.get("success") is True, (done.stdout, done.stderr)
        return dict(last["data"])

    def connect(self) -> None:
        """Start the daemon and connect the FakeOpenAI as brv's LLM provider."""
        self.run(
            *("providers", "connect", "openai-compatible", "--base-url", self.llm.base_url),
            *("--api-key", API_KEY, "--model", MODEL),
        )

    def processes(self) -> list[int]:
        """Every process of this brv: the daemon, its agents, runs in progress."""
        return _pids_with(f"BRV_DATA_DIR={self.data_dir}")

    def clients(self) -> list[int]:
        """The brv runs in progress (``node …/brv <subcommand> …``), not the daemon or agents."""
        found = []
        for pid in self.processes():
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if len(argv) > 2 and argv[1].endswith((b"/brv", b"/run.js")):
                    found.append(pid)
        return found

    def notes(self, workdir: Path) -> dict[str, str]:
        """The notes brv wrote into the context tree of ``workdir``: path in the tree -> text."""
        tree = workdir / ".brv" / "context-tree"
        return {
            str(path.relative_to(tree)): path.read_text(encoding="utf-8")
            for path in sorted(tree.rglob("*.md"))
            if path.name != "context.md" and not path.name.endswith(NOTE_ENDINGS)
        }

    def close(self) -> None:
        """Stop the daemon (SIGTERM), then SIGKILL what is left; remove the directory."""
        with contextlib.suppress(OSError, ValueError, KeyError):
            daemon = json.loads((self.data_dir / "daemon.json").read_text())
            os.kill(int(daemon["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while any(_alive(pid) for pid in self.processes()) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.processes():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in self.processes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)

    def failure_log(self) -> str:
        """What tests/real_servers/conftest.py shows when a test using brv fails."""
        logs = sorted((self.data_dir / "logs").glob("server-*.log"))
        if not logs:
            return "(no brv daemon log)"
        text = logs[-1].read_text(encoding="utf-8", errors="replace")
        return f"{logs[-1]}:\n" + "\n".join(text.splitlines()[-150:])

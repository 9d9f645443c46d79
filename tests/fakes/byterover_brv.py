"""A fake ``brv`` (ByteRover CLI) for the tests: a small Python script put first on ``PATH``.

:func:`install_fake_brv` writes the script as ``<directory>/brv`` and returns
the directory. It implements the subcommands the provider calls, keeping its
data in the working directory it is run in (``.brv/context-tree/
entries.jsonl``), as the real brv keeps its context tree in the project. Like
the provider it speaks ``--format json`` only; it parses flags as brv's oclif
parser does (anywhere before ``--``: ``--help`` prints the usage and exits 0,
an unknown flag exits 2; after ``--`` every token is an argument), and
answers as brv 3.14 does:
JSON lines, the last one ``{"command", "data", "success", "timestamp"}``:

* ``brv curate --format json -- "<text>"``: appends the text; ``data`` is
  ``{"event": "completed", "status": "completed", ...}``;
* ``brv query --format json -- "<question>"``: the entries sharing a word with
  the question, best first, as ``- <entry>`` lines in ``data.result`` (with
  brv's ``Source`` footer), or brv's "No matching knowledge found" answer;
* ``brv status --format json``: ``data`` with ``projectRoot`` (the working
  directory), ``contextTreeDir`` and ``contextTreeStatus``.

Each run appends ``{"argv", "cwd", "pid"}`` to ``calls.jsonl`` beside the
script. :func:`set_mode` writes ``mode`` beside it: ``hang`` (start a
grandchild, write both pids to ``hung.pids``, sleep two minutes), ``fail``
(exit 2 with an error on stderr) or ``refuse`` (exit 0 with a failed answer,
``"success": false``, as the real brv does when no LLM provider is connected
or its LLM is down); ``""`` is normal.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

SCRIPT = r"""#!__PYTHON__
import json, os, re, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path

here = Path(__file__).resolve().parent
with open(here / "calls.jsonl", "a", encoding="utf-8") as log:
    log.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "pid": os.getpid()}) + "\n")
mode_file = here / "mode"
mode = mode_file.read_text().strip() if mode_file.exists() else ""
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    (here / "hung.pids").write_text(f"{os.getpid()} {child.pid}")
    time.sleep(120)
if mode == "fail":
    print("Error: not authenticated, run brv login", file=sys.stderr)
    sys.exit(2)

command, argv = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
# flags are parsed like oclif does: anywhere until "--", after it only arguments
args, flags = [], {}
while argv:
    token = argv.pop(0)
    if token == "--":
        args += argv
        break
    if token in ("--help", "-h"):
        print(f"USAGE\n  $ brv {command} [ARGS] [--format text|json]")
        sys.exit(0)
    if token == "--format" and argv:
        flags["format"] = argv.pop(0)
    elif token.startswith("-") and token != "-":
        print(f"Error: Nonexistent flag: {token.split('=')[0]}", file=sys.stderr)
        sys.exit(2)
    else:
        args.append(token)
if flags.get("format") != "json":
    print("this fake brv answers --format json only", file=sys.stderr)
    sys.exit(64)
def answer(data, success=True):
    stamp = datetime.now(timezone.utc).isoformat()
    print(json.dumps({"command": command, "data": data, "success": success, "timestamp": stamp}))
if mode == "refuse":
    answer({"error": "No provider connected.", "status": "error"}, success=False)
    sys.exit(0)

tree = Path(".brv") / "context-tree"
store = tree / "entries.jsonl"
def entries():
    if not store.exists():
        return []
    return [json.loads(line) for line in store.read_text(encoding="utf-8").splitlines()]
def words(text):
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}

if command == "curate" and len(args) == 1:
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(args[0]) + "\n")
    answer({"event": "thinking"})
    answer({"event": "completed", "message": "Context curated successfully", "status": "completed"})
elif command == "query" and len(args) == 1:
    probe = words(args[0])
    scored = [(len(probe & words(e)), i, e) for i, e in enumerate(entries())]
    scored.sort(key=lambda s: (-s[0], s[1]))
    found = [e for score, _, e in scored if score][:5]
    lines = "\n".join(f"- {' '.join(e.split())}" for e in found)
    none = f"**Summary**: No matching knowledge found for {args[0]!r}."
    result = (lines or none) + "\n\n---\nSource: ByteRover Knowledge Base"
    answer({"event": "completed", "result": result, "status": "completed"})
elif command == "status" and not args:
    root = os.getcwd()
    state = "no_vc" if entries() else "not_initialized"
    answer({"cliVersion": "fake", "contextTreeDir": str(Path(root) / tree),
            "contextTreeStatus": state, "currentDirectory": root, "projectRoot": root})
else:
    print(f"Command {command!r} not found", file=sys.stderr)
    sys.exit(1)
"""


def install_fake_brv(directory: Path) -> Path:
    """Write the fake ``brv`` into ``directory`` (created); return the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "brv"
    path.write_text(SCRIPT.replace("__PYTHON__", sys.executable), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def set_mode(directory: Path, mode: str) -> None:
    (directory / "mode").write_text(mode, encoding="utf-8")


def calls(directory: Path) -> list[dict[str, Any]]:
    """Every run so far: ``argv``, ``cwd``, ``pid``."""
    path = directory / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def entries(workdir: Path) -> list[str]:
    """What the fake has curated in ``workdir``."""
    path = workdir / ".brv" / "context-tree" / "entries.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not count)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, IndexError):
        return False
    return fields[0] != "Z"


def path_with(directory: Path) -> str:
    return f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"

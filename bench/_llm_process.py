"""The fake OpenAI server in a process of its own, for a bench measured from outside.

In production the model is remote: its work does not share the gateway's process
(nor its GIL). ``llm_process()`` starts ``tests.fakes.FakeOpenAI`` (answering its
default reply, "ok") in a child Python process and yields its base URL; the child
ends when the block does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SERVE = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.fakes import FakeOpenAI
with FakeOpenAI() as server:
    print(server.base_url, flush=True)
    sys.stdin.read()  # until the bench closes it
"""


@dataclass(frozen=True)
class RemoteLLM:
    base_url: str


@contextmanager
def llm_process() -> Iterator[RemoteLLM]:
    """A fake LLM answering "ok" to every chat request, in a child process."""
    child = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(ROOT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        url = child.stdout.readline().strip()
        if not url.startswith("http"):
            raise SystemExit(f"the fake LLM process did not start (exit {child.poll()})")
        yield RemoteLLM(url)
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

"""Running ``brv`` as a subprocess: bounded, killed on timeout, never a hang.

Each run starts ``brv <subcommand> --format json -- <argument>`` in the user's
own working directory (so each person's context tree is apart), in a new
process group, with stdin closed, and waits at most ``timeout`` seconds; past
that the whole group (brv and anything it started) is killed with SIGKILL and
reaped, and :class:`BrvTimeout` is raised. A missing executable is
:class:`BrvMissing` (with the install hint), a non-zero exit :class:`BrvFailed`
with the exit code only: brv's output can quote memory text, so it is logged
at DEBUG alone. After ``--`` brv's option parser takes the argument as text
even when it starts with ``-``: a message beginning ``--help`` is curated,
not answered with brv's help.

brv exits 0 when its task fails too (no LLM provider connected, the LLM
down, its daemon not starting): only its answer tells, so it is asked for
JSON lines, and the last one is the answer. One that is not
``"success": true`` is :class:`BrvReported`, a :class:`BrvFailed` with exit
code 0, and its message is logged at DEBUG alone as well.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from plugins.memory._kit import ProviderUnavailable

from ._config import INSTALL_HINT

logger = logging.getLogger(__name__)

MAX_OUTPUT = 8000
"""Characters of brv's answer kept; the rest is cut (the model's context is finite)."""
MAX_LOGGED = 2000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class BrvError(ProviderUnavailable):
    """A brv run did not succeed; the message never quotes its output."""


class BrvMissing(BrvError):
    def __init__(self, binary: str) -> None:
        super().__init__(f"the brv CLI ({binary}) is not installed: {INSTALL_HINT}")


class BrvTimeout(BrvError):
    def __init__(self, subcommand: str, timeout: float) -> None:
        super().__init__(f"brv {subcommand} took longer than {timeout:g} s and was stopped")


class BrvFailed(BrvError):
    def __init__(self, subcommand: str, code: int, reason: str = "") -> None:
        self.code = code
        super().__init__(f"brv {subcommand} failed ({reason or f'exit code {code}'})")


class BrvReported(BrvFailed):
    """brv exited 0, but its answer says the run failed."""

    def __init__(self, subcommand: str) -> None:
        reason = "it answered with an error; is an LLM provider connected? see brv providers"
        super().__init__(subcommand, 0, reason)


def resolve(binary: str) -> str | None:
    """The executable's path, or None when it cannot be found."""
    return shutil.which(binary)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def text(value: Any) -> str:
    """A text in brv's answer for the model: ANSI codes removed, cut to :data:`MAX_OUTPUT`."""
    return _ANSI.sub("", value).strip()[:MAX_OUTPUT] if isinstance(value, str) else ""


def _answer(subcommand: str, out: str) -> dict[str, Any]:
    """The ``data`` of brv's last JSON line; :class:`BrvReported` unless it succeeded."""
    last: Any = None
    for line in out.splitlines():
        with contextlib.suppress(ValueError):
            last = json.loads(line)
    data = last.get("data") if isinstance(last, dict) else None
    if not isinstance(data, dict) or last.get("success") is not True or "error" in data:
        logger.debug("brv %s reported: %s", subcommand, out[-MAX_LOGGED:])
        raise BrvReported(subcommand)
    return data


def run(binary: str, args: list[str], cwd: Path, timeout: float) -> dict[str, Any]:
    """The ``data`` of brv's JSON answer to ``brv <args[0]> --format json -- <args[1:]>``."""
    path = resolve(binary)
    if path is None:
        raise BrvMissing(binary)
    cwd.mkdir(mode=0o700, parents=True, exist_ok=True)
    subcommand = args[0] if args else ""
    try:
        proc = subprocess.Popen(
            [path, subcommand, "--format", "json", *(["--", *args[1:]] if args[1:] else [])],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
    except FileNotFoundError:
        raise BrvMissing(binary) from None
    except OSError as exc:
        raise BrvFailed(subcommand, -1) from exc
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=5)
        raise BrvTimeout(subcommand, timeout) from None
    finally:
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait(timeout=5)
    if proc.returncode != 0:
        logger.debug("brv %s exit %d: %s", subcommand, proc.returncode, err[-MAX_LOGGED:])
        raise BrvFailed(subcommand, proc.returncode)
    return _answer(subcommand, out)

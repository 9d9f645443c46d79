"""Running ``brv`` as a subprocess: bounded, killed on timeout, never a hang.

Each run starts ``brv <subcommand> <argument>`` in the user's own working
directory (so each person's context tree is apart), in a new process group,
with stdin closed, and waits at most ``timeout`` seconds; past that the whole
group (brv and anything it started) is killed with SIGKILL and reaped, and
:class:`BrvTimeout` is raised. A missing executable is :class:`BrvMissing`
(with the install hint), a non-zero exit :class:`BrvFailed` with the exit code
only: brv's output can quote memory text, so it is logged at DEBUG alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from ._config import INSTALL_HINT

logger = logging.getLogger(__name__)

MAX_OUTPUT = 8000
"""Characters of brv's answer kept; the rest is cut (the model's context is finite)."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class BrvError(RuntimeError):
    """A brv run did not succeed; the message never quotes its output."""


class BrvMissing(BrvError):
    def __init__(self, binary: str) -> None:
        super().__init__(f"the brv CLI ({binary}) is not installed: {INSTALL_HINT}")


class BrvTimeout(BrvError):
    def __init__(self, subcommand: str, timeout: float) -> None:
        super().__init__(f"brv {subcommand} took longer than {timeout:g} s and was stopped")


class BrvFailed(BrvError):
    def __init__(self, subcommand: str, code: int) -> None:
        self.code = code
        super().__init__(f"brv {subcommand} failed (exit code {code})")


def resolve(binary: str) -> str | None:
    """The executable's path, or None when it cannot be found."""
    return shutil.which(binary)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def run(binary: str, args: list[str], cwd: Path, timeout: float) -> str:
    """brv's standard output (ANSI codes removed, cut to :data:`MAX_OUTPUT`)."""
    path = resolve(binary)
    if path is None:
        raise BrvMissing(binary)
    cwd.mkdir(mode=0o700, parents=True, exist_ok=True)
    subcommand = args[0] if args else ""
    try:
        proc = subprocess.Popen(
            [path, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
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
        logger.debug("brv %s exit %d: %s", subcommand, proc.returncode, err[-2000:])
        raise BrvFailed(subcommand, proc.returncode)
    return _ANSI.sub("", out).strip()[:MAX_OUTPUT]

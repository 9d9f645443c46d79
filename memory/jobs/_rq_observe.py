"""What ``chorus worker`` tells whoever watches it: each job's outcome, and its health.

- ``JobObserver(kind, outcome, seconds)`` is called once per job a worker ran:
  ``kind`` is the job function's name (``sync_turn``), ``outcome`` one of
  ``OUTCOMES`` (``done``; ``retried``: it failed and rq will run it again;
  ``failed``: for good), ``seconds`` how long it ran.
- ``JobEvents`` carries those calls from the forked worker processes of
  ``--concurrency N`` to the supervisor (which serves the metrics): one pipe per
  worker process, so a process killed mid-write blocks nobody else, and one
  thread in the supervisor reading them all.
- ``WorkerHealth``: healthy while the worker's upkeep reached Redis within the
  last ``ttl`` seconds (it beats every second while the worker's loop runs);
  a failed beat, or the loop stopping, makes it unhealthy at once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait

__all__ = ["NO_WATCH", "OUTCOMES", "JobEvents", "JobObserver", "Watch", "WorkerHealth", "job_kind"]

logger = logging.getLogger(__name__)

OUTCOMES = ("done", "retried", "failed")
JobObserver = Callable[[str, str, float], None]
"""Called with (kind, outcome, seconds) after each job a worker ran."""
READ_TIMEOUT = 0.5
"""Seconds the supervisor's reader waits before looking for new worker processes' pipes."""


def job_kind(func_name: str | None) -> str:
    """``agent.jobs.sync_turn`` -> ``sync_turn``."""
    return (func_name or "unknown").rsplit(".", 1)[-1]


class WorkerHealth:
    """Whether the worker's loop runs and reaches Redis (its upkeep says so)."""

    def __init__(self) -> None:
        self._ok_until = 0.0

    def reached(self, ttl: float) -> None:
        """The upkeep reached Redis just now: healthy for ``ttl`` seconds."""
        self._ok_until = time.monotonic() + ttl

    def lost(self) -> None:
        """Redis did not answer, or the loop stopped: unhealthy until the next beat."""
        self._ok_until = 0.0

    def healthy(self) -> bool:
        return time.monotonic() < self._ok_until


@dataclass(frozen=True)
class Watch:
    """Who hears of the jobs (``observer``), keeps the worker's health (``health``) and
    starts once the worker processes were forked (``started``)."""

    observer: JobObserver | None = None
    health: WorkerHealth | None = None
    started: Callable[[], None] | None = None
    """Called once the worker processes run (a listener of the supervisor, say)."""


NO_WATCH = Watch()


class JobEvents:
    """Job outcomes from forked worker processes, handed to ``observer`` in this one."""

    def __init__(self, observer: JobObserver) -> None:
        self._observer = observer
        self._readers: list[Connection] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._read, name="chorus-job-events", daemon=True)

    def channel(self) -> tuple[JobObserver, Connection]:
        """An observer for one worker process to be forked, and the end of its pipe this
        process must close once the worker process started."""
        reader, writer = Pipe(duplex=False)
        with self._lock:
            self._readers.append(reader)

        def observe(kind: str, outcome: str, seconds: float) -> None:
            with contextlib.suppress(OSError, ValueError):  # the supervisor is gone
                writer.send((kind, outcome, seconds))

        return observe, writer

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.ident is not None:
            self._thread.join(READ_TIMEOUT * 4)

    def _read(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                readers = list(self._readers)
            if not readers:
                self._stopping.wait(READ_TIMEOUT)
                continue
            for ready in wait(readers, READ_TIMEOUT):
                assert isinstance(ready, Connection)
                self._take(ready)

    def _take(self, reader: Connection) -> None:
        try:
            kind, outcome, seconds = reader.recv()
        except (EOFError, OSError, ValueError, TypeError):  # its worker process ended
            with self._lock:
                self._readers.remove(reader)
            reader.close()
            return
        try:
            self._observer(str(kind), str(outcome), float(seconds))
        except Exception:
            logger.exception("recording a job's outcome failed")

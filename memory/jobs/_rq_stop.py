"""SIGTERM and SIGINT in a worker process, from its first moment to its last.

rq installs its signal handlers only when a worker's loop starts. Before that
(while the process sets up, while a fresh worker starts after a lost Redis) a
signal met Python's default and killed the process on the spot (exit -15, no
warm stop), or met the handler of a worker whose loop had already ended.
``StopSignals`` is armed before anything else: a signal always marks the process
as asked to stop, and while a worker's loop runs it goes on to rq's own handler
(a warm stop; a second signal a cold one), exactly as rq would have had it.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Protocol

import redis

__all__ = ["StopSignals", "wait_for_redis"]

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stoppable(Protocol):
    """What a running rq worker offers a signal (``Worker.request_stop``)."""

    def request_stop(self, signum: int, frame: FrameType | None) -> None: ...


class StopSignals:
    """This process's wish to stop, and the worker whose loop hears of it now."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._worker: Stoppable | None = None

    def arm(self) -> None:
        """Handle SIGTERM/SIGINT here (a no-op outside the main thread, where Python
        cannot install a handler; a worker run there is stopped by its caller)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def running(self, worker: Stoppable) -> bool:
        """``worker``'s loop starts now; False if a stop was asked for already."""
        self._worker = worker
        self.arm()
        return not self.requested.is_set()

    def ended(self) -> None:
        """The running worker's loop is over: a signal only marks the wish from now on."""
        self._worker = None
        self.arm()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.requested.set()
        worker = self._worker
        if worker is not None:
            worker.request_stop(signum, frame)


def wait_for_redis(url: str, delay: float, stop: threading.Event) -> bool:
    """Wait ``delay``, then until Redis answers PING (trying every ``delay``); True if
    ``stop`` was set meanwhile."""
    if stop.wait(delay):
        return True
    while not stop.is_set():
        try:
            redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
            return False
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            if stop.wait(delay):
                return True
    return True

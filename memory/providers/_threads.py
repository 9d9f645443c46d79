"""ThreadBackground: the in-process, single-worker runner for the manager's background work.

One worker thread runs the submitted callables one at a time, in submission
order, so turn N always reaches the providers before turn N+1. The thread is
started on the first submit (a session that only has the built-in provider
never starts one) and is a daemon: a provider call wedged past the bounded
drain of :meth:`ThreadBackground.close` cannot keep the process from exiting.
(A ``ThreadPoolExecutor`` would not do: the interpreter joins its workers at
exit, so one wedged call would hang shutdown forever.)
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait

logger = logging.getLogger(__name__)

THREAD_NAME = "mem-sync"

_Job = tuple[Callable[[], None], "Future[None]"]


def _noop() -> None:
    """The flush barrier's job."""


def _cancel(future: Future[None]) -> None:
    """Cancel a job that never started, waking anyone waiting on it."""
    future.cancel()
    future.set_running_or_notify_cancel()


class ThreadBackground:
    """A lazily started single daemon worker with a flush barrier and a bounded close."""

    def __init__(self, *, thread_name: str = THREAD_NAME) -> None:
        self._thread_name = thread_name
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._running: Future[None] | None = None
        self._closed = False

    def submit(self, fn: Callable[[], None]) -> None:
        """Queue ``fn``; after :meth:`close` the work is dropped (and logged at DEBUG)."""
        with self._lock:
            if self._closed:
                logger.debug("background worker is closed; job dropped")
                return
            self._enqueue_locked(fn)

    def _enqueue_locked(self, fn: Callable[[], None]) -> Future[None]:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._work, name=f"{self._thread_name}_0", daemon=True
            )
            self._thread.start()
        future: Future[None] = Future()
        self._jobs.put((fn, future))
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, future = job
            with self._lock:
                if self._closed:
                    _cancel(future)
                    continue
                future.set_running_or_notify_cancel()
                self._running = future
            try:
                fn()
            except Exception as exc:
                logger.warning("background memory job failed: %s", type(exc).__name__)
                logger.debug("background memory job failure details", exc_info=exc)
            finally:
                with self._lock:
                    self._running = None
                future.set_result(None)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything submitted so far has run; False if ``timeout`` expired.

        A no-op job is queued behind the pending ones and awaited: with one
        worker, its completion means every earlier job has finished. After
        :meth:`close`, waits only for the job still in flight, if any.
        """
        with self._lock:
            if self._thread is None:
                return True
            barrier = self._running if self._closed else self._enqueue_locked(_noop)
        if barrier is None:
            return True
        done, _ = wait([barrier], timeout=timeout)
        return barrier in done

    def close(self, timeout: float) -> None:
        """Stop accepting work, cancel what has not started, wait ≤ ``timeout`` for the rest.

        A job still running after ``timeout`` is abandoned (logged at WARNING);
        its daemon thread dies with the process.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            cancelled = 0
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    _cancel(job[1])
                    cancelled += 1
            self._jobs.put(None)
            running = self._running
        if cancelled:
            logger.info("memory background: %d queued job(s) cancelled at close", cancelled)
        if running is not None:
            done, _ = wait([running], timeout=timeout)
            if not done:
                logger.warning(
                    "memory background job still running after %.1fs; abandoning it", timeout
                )

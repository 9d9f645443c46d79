"""``chorus worker --concurrency N``: N worker processes under one supervisor.

Each worker process is forked (``fork``: the queue's settings and the job
context come along) with a parent-death signal, so none outlives the
supervisor; one that exits is replaced. The supervisor runs the upkeep with
rq's scheduler, hears of every worker process's jobs (``JobEvents``) and keeps
the health a listener reports. SIGTERM stops them all warmly: each finishes
its current job. With N = 1 the one worker runs in this process.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import threading
import uuid
from collections.abc import Callable
from multiprocessing.process import BaseProcess

from memory.jobs._rq_observe import NO_WATCH, JobEvents, JobObserver, Watch
from memory.jobs._rq_stop import StopSignals
from memory.jobs._rq_worker import LIVENESS_TTL, Upkeep, WorkedQueue, work

__all__ = ["supervise"]

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: SIGTERM this process when its parent dies (a warm stop after the current job)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _child(
    queue: WorkedQueue,
    burst: bool,
    liveness_ttl: float,
    parent: int,
    on_stop: Callable[[], None] | None,
    observer: JobObserver | None,
) -> None:
    # The fork copied the supervisor's handlers; a signal must stop this worker
    # process warmly, not run the supervisor's stop() here.
    signals = StopSignals()
    signals.arm()
    _die_with_parent()
    if os.getppid() != parent:  # the supervisor died before the signal was armed
        return
    work(
        queue,
        burst=burst,
        schedule=False,
        liveness_ttl=liveness_ttl,
        on_stop=on_stop,
        watch=Watch(observer=observer),
        signals=signals,
    )


def supervise(
    queue: WorkedQueue,
    *,
    concurrency: int,
    burst: bool,
    liveness_ttl: float = LIVENESS_TTL,
    on_stop: Callable[[], None] | None = None,
    watch: Watch = NO_WATCH,
) -> None:
    """``concurrency`` worker processes and the scheduler; SIGTERM stops them all warmly.

    ``on_stop`` runs in every worker process as it stops; ``watch.started`` runs in
    this process once the worker processes were forked (a thread it starts is not
    copied into them); ``watch.observer`` hears of every worker process's jobs here.
    """
    if concurrency <= 1:
        signals = StopSignals()
        signals.arm()  # before anyone can see this process (its health listener)
        if watch.started is not None:
            watch.started()
        work(
            queue,
            burst=burst,
            schedule=True,
            liveness_ttl=liveness_ttl,
            on_stop=on_stop,
            watch=watch,
            signals=signals,
        )
    else:
        _supervise(queue, concurrency, burst, liveness_ttl, on_stop, watch)


def _supervise(
    queue: WorkedQueue,
    concurrency: int,
    burst: bool,
    liveness_ttl: float,
    on_stop: Callable[[], None] | None,
    watch: Watch,
) -> None:
    context = multiprocessing.get_context("fork")
    stopping = threading.Event()
    name = uuid.uuid4().hex
    upkeep = Upkeep(queue, name, schedule=True, liveness_ttl=liveness_ttl, health=watch.health)
    events = JobEvents(watch.observer) if watch.observer is not None else None

    def spawn() -> BaseProcess:
        observer, end = events.channel() if events is not None else (None, None)
        child = context.Process(
            target=_child,
            args=(queue, burst, liveness_ttl, os.getpid(), on_stop, observer),
            daemon=False,
        )
        child.start()
        if end is not None:
            end.close()  # the worker process has its copy; EOF here once it is gone
        return child

    children: list[BaseProcess] = []

    def stop(signum: int, frame: object) -> None:
        stopping.set()
        for child in children:
            if child.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for _ in range(concurrency):
            children.append(spawn())  # before any thread of ours exists: a clean fork
        upkeep.beat()
        upkeep.start()
        if events is not None:
            events.start()
        if watch.started is not None:
            watch.started()
        logger.info("worker supervisor: %d workers on queue %s", concurrency, queue.name)
        _watch(children, spawn, stopping, burst=burst)
        for child in children:
            child.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        upkeep.stop()
        if events is not None:
            events.stop()


def _watch(
    children: list[BaseProcess],
    spawn: Callable[[], BaseProcess],
    stopping: threading.Event,
    *,
    burst: bool,
) -> None:
    """Until ``stopping`` is set, start another worker process for each one that exits;
    in burst mode none is replaced and this returns once all of them are done."""
    while not stopping.is_set():
        for index, child in enumerate(children):
            child.join(timeout=0.2)
            if child.is_alive() or stopping.is_set() or burst:
                continue
            logger.warning("a worker process exited (code %s); starting another", child.exitcode)
            children[index] = spawn()
        if burst and not any(child.is_alive() for child in children):
            return

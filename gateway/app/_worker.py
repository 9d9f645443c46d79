"""``chorus worker``: the rq worker that runs chorus's background jobs.

It loads settings once, hands them to the job functions' context, and runs an
rq ``Worker`` (with its scheduler, for retry backoff) on chorus's queue. rq
handles SIGTERM as a warm shutdown: the current job finishes, then it exits.
Jobs run under their session's lease from the job ledger, and the worker sends
again, at start and periodically, the ledger's jobs that Redis lost.

With ``worker.metrics.port`` the worker serves ``/metrics`` (its jobs by kind and
outcome, their durations, the queue's depth, the process) and ``/healthz`` (200
while its loop runs and reaches Redis, else 503) on ``worker.metrics.host``.
"""

from __future__ import annotations

import logging

from agent import jobs, tracing
from gateway.app._background import job_context, update_job_context
from gateway.app._tracing import TRACE_FLUSH_SECONDS, start_tracing
from gateway.config import (
    ConfigWatcher,
    LiveSettings,
    Settings,
    database_location,
    load_settings,
    require_private_home,
)
from gateway.errors import ConfigError
from gateway.ops import OpsThread, WorkerMetrics
from memory.jobs import OUTCOMES, JobLedger, Outbox, Watch, WorkerHealth, mask_url

logger = logging.getLogger(__name__)


def run_worker(settings: Settings, *, burst: bool = False, concurrency: int = 1) -> None:
    redis = settings.redis
    if redis.url is None:
        raise ConfigError(
            "chorus worker needs redis.url (CHORUS_REDIS__URL); without Redis, background "
            "jobs run inside the gateway and console processes"
        )
    require_private_home(settings.home)
    from memory.jobs import RQQueue

    live = LiveSettings(settings)
    context = job_context(live)
    live.subscribe(lambda fresh: update_job_context(context, fresh))
    watcher = ConfigWatcher(live, lambda: load_settings(settings.home))
    jobs.configure(context, refresh=watcher.check)
    url = redis.url.get_secret_value()
    queue = RQQueue(
        url,
        outbox=Outbox(database_location(settings)),
        queue_name=redis.queue_name,
        retries=redis.job_retries,
        retry_intervals=redis.retry_intervals,
        job_timeout=redis.job_timeout,
        ledger=JobLedger(database_location(settings)),
    )
    logger.info("worker on %s, queue %s", mask_url(url), redis.queue_name)
    queue.drain_outbox()
    health = WorkerHealth()
    metrics = WorkerMetrics(
        kinds=jobs.JOB_NAMES, outcomes=OUTCOMES, healthy=health.healthy, depth=queue.depth
    )
    listening = settings.worker.metrics
    listener = (
        OpsThread(listening.host, listening.port, render=metrics.render, healthy=health.healthy)
        if listening.port is not None
        else None
    )

    def started() -> None:
        if listener is None:
            return
        try:
            listener.start()
        except OSError as exc:
            raise ConfigError(
                f"worker.metrics.port: cannot listen on {listening.host}:{listening.port} "
                f"({exc.strerror or exc})"
            ) from None

    watch = Watch(observer=metrics.observe, health=health, started=started)
    start_tracing(settings, None)  # each job a span, linked to the turn that queued it
    try:
        queue.run_worker(burst=burst, concurrency=concurrency, on_stop=jobs.shutdown, watch=watch)
    finally:
        if listener is not None:
            listener.stop()
        tracing.shutdown(TRACE_FLUSH_SECONDS)

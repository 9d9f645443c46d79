"""Wires background work from settings: the queue, the job context, the scheduler.

With ``redis.url`` jobs go to Redis and ``chorus worker`` processes run them;
without it the same job functions run on an in-process worker thread. Either
way this process configures ``agent.jobs`` so in-process jobs find their context.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent import jobs
from agent.context import AgentConfig
from agent.jobs import JobContext, JobScheduler, ProviderSource
from agent.shared_writes import WriteAudit
from gateway.access import GatewayDB, admin_checker
from gateway.budgets import open_meter
from gateway.config import LiveSettings, Settings, database_location, secrets_environment
from gateway.errors import ConfigError
from memory.database import Location
from memory.jobs import BackgroundQueue, InProcessQueue, JobLedger, JobState, Outbox, mask_url
from memory.providers import MemoryProvider, ProviderHealth
from plugins.memory import load_memory_provider, local_state_refusal, resolve_config

logger = logging.getLogger(__name__)


def agent_config(settings: Settings) -> AgentConfig:
    return AgentConfig(
        llm=settings.llm,
        agent=settings.agent,
        compression=settings.compression,
        memory=settings.memory,
    )


def provider_source(
    live: LiveSettings, health: Callable[[], ProviderHealth | None] | None = None
) -> ProviderSource | None:
    """The configured external provider (``memory.provider``), or None for built-in only.

    Its settings are read from the settings in effect and the environment (with
    ``CHORUS_HOME/.env``) each time a session's provider is built. Raises
    ConfigError for a provider whose state would not survive (see
    :func:`~plugins.memory.local_state_refusal`).
    """
    name = live.current.memory.provider
    if not name:
        return None
    home = live.current.home
    refusal = local_state_refusal(
        name,
        home,
        shared_database=live.current.database.url is not None,
        local_state=live.current.memory.local_state,
    )
    if refusal is not None:
        logger.error("memory provider %s refused: its state would not survive", name)
        raise ConfigError(refusal)

    def load() -> MemoryProvider:
        return load_memory_provider(name, home)

    def config(provider: MemoryProvider) -> dict[str, Any]:
        section = live.current.memory.providers.get(name, {})
        return resolve_config(provider, section, secrets_environment(home))

    if health is None:
        return ProviderSource(name, load, config)
    return ProviderSource(name, load, config, health)


def audit_log(where: Location) -> WriteAudit:
    """The audit log for the jobs' shared-memory writes (rare: a flush that writes
    MEMORY.md), opened for each row so no connection crosses a worker's fork."""

    def audit(actor: str, command: str, args: str, outcome: str) -> None:
        with GatewayDB(where) as db:
            db.audit(actor, command, args, outcome, time.time())

    return audit


def job_context(live: LiveSettings) -> JobContext:
    settings = live.current
    context = JobContext(
        settings.home,
        agent_config(settings),
        provider_source(live, lambda: context.health),  # this process's health record
        handoff=settings.sessions.handoff,
        is_admin=admin_checker(settings.auth.admins),
        database=database_location(settings),
        audit=audit_log(database_location(settings)),
        meters=functools.partial(
            open_meter,
            lambda: live.current,
            database_location(settings),
            is_admin=lambda key: admin_checker(live.current.auth.admins)(key),
            write_through=True,
        ),
    )
    return context


def update_job_context(context: JobContext, settings: Settings) -> None:
    """Hand reloaded settings to the job functions of this process."""
    context.update(
        agent_config(settings),
        handoff=settings.sessions.handoff,
        is_admin=admin_checker(settings.auth.admins),
    )


def queue_from_settings(settings: Settings, *, start_drainer: bool = True) -> BackgroundQueue:
    """The queue ``settings`` ask for: an ``RQQueue`` with ``redis.url`` (rq and redis are
    imported only then), else an ``InProcessQueue``.

    A queue that sends jobs (``start_drainer``) keeps them in the job ledger until
    they are done, sends again what Redis lost, and enqueues without waiting for
    Redis: a thread hands the jobs over.
    """
    redis = settings.redis
    if redis.url is None:
        return InProcessQueue(retries=redis.job_retries)
    from memory.jobs import RQQueue

    queue = RQQueue(
        redis.url.get_secret_value(),
        outbox=Outbox(database_location(settings)),
        queue_name=redis.queue_name,
        retries=redis.job_retries,
        retry_intervals=redis.retry_intervals,
        job_timeout=redis.job_timeout,
        ledger=JobLedger(database_location(settings)) if start_drainer else None,
        background=start_drainer,
    )
    if start_drainer:
        queue.start_drainer()
    logger.info("background jobs go to Redis at %s", mask_url(redis.url.get_secret_value()))
    return queue


@dataclass
class Background:
    queue: BackgroundQueue
    state: JobState
    scheduler: JobScheduler
    context: JobContext
    provider: ProviderSource | None

    def close(self, timeout: float) -> None:
        """Let queued work finish and release everything, within ``timeout`` in total.

        What is left then is not lost: sessions whose end was requested end at the
        next start (their reason is recorded), and jobs bound for Redis wait in the
        outbox.
        """
        deadline = time.monotonic() + timeout
        if not self.queue.flush(timeout):
            logger.warning("background jobs still pending after %.0fs", timeout)
        self.queue.close(max(0.1, deadline - time.monotonic()))
        self.state.close()
        self.context.close()


def start_background(
    live: LiveSettings,
    *,
    queue_factory: Callable[[Settings], BackgroundQueue] = queue_from_settings,
) -> Background:
    """Queue, job state and scheduler for a gateway or console process."""
    settings = live.current
    context = job_context(live)
    live.subscribe(lambda fresh: update_job_context(context, fresh))
    jobs.configure(context)
    state = JobState(database_location(settings))
    queue = queue_factory(settings)
    return Background(
        queue=queue,
        state=state,
        scheduler=JobScheduler(queue, state),
        context=context,
        provider=context.provider,
    )

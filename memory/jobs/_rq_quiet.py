"""One line, not a traceback, when rq's worker loop ends because Redis went away.

rq ends its loop on any exception it does not expect there; a connection lost
while it records a heartbeat or runs its maintenance is one of those, and rq logs
it at ERROR with the whole traceback. chorus restarts that worker once Redis
answers again (``memory.jobs._rq_worker``), so the loss is an expected event of
an outage: it becomes one WARNING line naming the error. Any other exception
keeps rq's traceback.
"""

from __future__ import annotations

import logging

import redis

__all__ = ["quiet_redis_losses"]

RQ_WORKER_LOGGER = "rq.worker"


class _RedisLoss(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, redis.RedisError):
            name = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "Worker %s: Redis went away (%s); the worker restarts when it answers"
            record.args = (name, type(exc).__name__)
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_FILTER = _RedisLoss()


def quiet_redis_losses() -> None:
    """Install the filter on rq's worker logger (once)."""
    logging.getLogger(RQ_WORKER_LOGGER).addFilter(_FILTER)

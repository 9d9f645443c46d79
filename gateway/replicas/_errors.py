"""``ReplicaError``: what callers see when the shared Redis cannot do its part.

Every primitive of this package talks to Redis, and a caller (a webhook handler,
a lease renewer) must be able to tell "Redis is down" from a bug without
importing ``redis`` itself, which only this package may. So each round trip runs
inside ``guard()``, which turns redis-py's errors into ``ReplicaError``. The
message names the operation and the error, never the URL: a Redis URL may carry
a password.

Exception tree::

    GatewayError        (gateway.errors) root of the gateway's errors
    └── ReplicaError    Redis, which the replicas share, is unreachable or refused
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from redis import exceptions

from gateway.errors import GatewayError

__all__ = ["ReplicaError", "guard"]


class ReplicaError(GatewayError):
    """Redis, which the replicas share, is unreachable or refused an operation.

    A caller answers a platform with a non-2xx status (so it retries later) or
    refuses to start; the text is safe to log and to show an operator.
    """


@contextmanager
def guard(operation: str) -> Iterator[None]:
    """Run one Redis round trip; its failure leaves as ``ReplicaError``."""
    try:
        yield
    except exceptions.AuthenticationError as exc:
        raise ReplicaError(f"Redis refused the credentials ({operation})") from exc
    except (exceptions.ConnectionError, exceptions.TimeoutError) as exc:
        raise ReplicaError(
            f"Redis is unreachable ({operation}): {type(exc).__name__}: {exc}"
        ) from exc
    except exceptions.RedisError as exc:
        raise ReplicaError(f"Redis failed {operation}: {type(exc).__name__}: {exc}") from exc

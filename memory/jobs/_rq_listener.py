"""Ending rq's command listener without waiting out its read of the channel.

rq's worker listens for commands (``stop-job``, ``shutdown``) in a thread that reads
its channel in waits of up to 60 s and looks at its stop flag only between two.
rq's own teardown unsubscribes first and trips the flag after, so the answer to
the unsubscribe can wake the read before the flag is down: the thread reads
again, rq waits a second for it and leaves it reading. Tripping the flag first,
then unsubscribing, wakes the read with Redis's answer and the thread ends there.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["stop_listening"]

JOIN_SECONDS = 3.0
"""How long to wait for the thread when Redis does not answer the unsubscribe."""


def stop_listening(worker: Any) -> None:
    """End ``worker``'s listener thread (if it runs) and close its channel."""
    thread = getattr(worker, "pubsub_thread", None)
    pubsub = getattr(worker, "pubsub", None)
    if thread is not None and thread.is_alive():
        thread.stop()
        if pubsub is not None:
            with contextlib.suppress(Exception):  # Redis gone: the join's wait ends it
                pubsub.unsubscribe()
        thread.join(timeout=JOIN_SECONDS)
    if pubsub is not None:
        with contextlib.suppress(Exception):
            pubsub.close()

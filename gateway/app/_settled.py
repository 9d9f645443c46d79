"""The long-running process once it has started: start-up's objects out of the collector's way.

Everything start-up made (modules, the libraries' tables, the stack itself —
hundreds of thousands of objects) lives as long as the process. After one
collection of start-up's garbage they are frozen (``gc.freeze()``): the
collector's later passes, the full ones included, no longer walk them, so a full
pass that lands on a message no longer holds the event loop for a quarter of a
second (what one took in ``bench/sessions.py``'s process).
"""

from __future__ import annotations

import gc
import logging

__all__ = ["settle_process"]

log = logging.getLogger(__name__)


def settle_process() -> None:
    """Collect start-up's garbage and freeze what is left.

    Called once the gateway has started (``chorus gateway``); the objects made later
    (sessions, caches) are collected as usual.
    """
    gc.collect()
    gc.freeze()
    log.debug("start-up objects frozen: %d", gc.get_freeze_count())

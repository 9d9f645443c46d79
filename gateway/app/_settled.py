"""The long-running process once it has started: what it keeps out of a message's way.

- The collector: everything start-up made (modules, the libraries' tables, the
  stack itself — hundreds of thousands of objects) lives as long as the process.
  After one collection of start-up's garbage they are frozen (``gc.freeze()``):
  later passes, the full ones included, no longer walk them, so a pass that lands
  on a message takes a fraction of a millisecond instead of a quarter of a second.
- The GIL: a message's work hops between the event loop and the worker threads
  that write the inbox, the transcripts and the ledger. A thread that has its
  result waits for the GIL up to the switch interval (5 ms by default) while
  another thread runs Python; :data:`SWITCH_INTERVAL` hands it on sooner.
"""

from __future__ import annotations

import gc
import logging
import sys

__all__ = ["SWITCH_INTERVAL", "settle_process"]

log = logging.getLogger(__name__)

SWITCH_INTERVAL = 0.001
"""Seconds a thread may hold the GIL while another waits for it (``sys.setswitchinterval``)."""


def settle_process() -> None:
    """Collect start-up's garbage, freeze what is left, shorten the switch interval.

    Called once the gateway has started (``chorus gateway``); the objects made later
    (sessions, caches) are collected as usual.
    """
    gc.collect()
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL)
    log.debug("start-up objects frozen: %d", gc.get_freeze_count())

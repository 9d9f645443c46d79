"""Platforms that failed for good: a token the platform rejected.

A wrong token is the operator's to fix, not something a retry gets past, and it
is handled alike on every platform: the adapter says so (``BaseAdapter.failure``),
``PlatformFailures`` logs it once (ERROR, with what to fix), ``/readyz`` lists it
under ``failed`` instead of waiting for it, and the other platforms keep serving.
``chorus gateway`` stops instead (exit 2) when no platform is left or when
``gateway.require_all_platforms`` is on (``PlatformFailures.fatal``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from gateway.adapters import BaseAdapter

__all__ = ["PlatformFailures"]

logger = logging.getLogger(__name__)


class PlatformFailures:
    def __init__(self, *, require_all: bool) -> None:
        self.require_all = require_all
        self.failed: dict[str, str] = {}
        """Platform → why it cannot work and what to fix."""

    def check(self, adapters: Iterable[BaseAdapter]) -> dict[str, str]:
        """The platforms failed so far; each new one is logged once."""
        adapters = list(adapters)
        new = {
            adapter.name: reason
            for adapter in adapters
            if adapter.name not in self.failed and (reason := adapter.failure()) is not None
        }
        self.failed.update(new)
        serving = ", ".join(a.name for a in adapters if a.name not in self.failed)
        for name, reason in new.items():
            if self.require_all or not serving:
                logger.error("%s failed: %s", name, reason)
            else:
                logger.error(
                    "%s failed: %s; %s keep(s) serving (gateway.require_all_platforms: true "
                    "stops the gateway instead)",
                    name,
                    reason,
                    serving,
                )
        return dict(self.failed)

    def fatal(self, adapters: Iterable[BaseAdapter]) -> str | None:
        """Why the gateway must stop (every platform failed, or one did and
        ``gateway.require_all_platforms`` is on); None while it may go on."""
        adapters = list(adapters)
        self.check(adapters)
        names = [adapter.name for adapter in adapters]
        failed = [name for name in names if name in self.failed]
        if not failed:
            return None
        reasons = "; ".join(f"{name}: {self.failed[name]}" for name in failed)
        if self.require_all:
            return f"{reasons} (gateway.require_all_platforms is on, so the gateway stops)"
        if len(failed) == len(names):
            return f"{reasons} (no platform is left to serve)"
        return None

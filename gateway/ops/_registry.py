"""What every chorus process exports before its own metrics: the process, Python, its build.

- ``process_*``: resident memory, CPU seconds, open and maximum file descriptors,
  start time (prometheus-client's ``ProcessCollector``, Linux only);
- ``python_info`` and ``python_gc_*`` (objects collected, collections, uncollectable);
- ``chorus_build_info{version="…"} 1``: the version ``chorus --version`` shows.

No ``*_created`` series: they double the number of series for a timestamp nobody
graphs (``disable_created_metrics``, process-wide, set once here).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

__all__ = ["chorus_version", "process_registry"]


def chorus_version() -> str:
    """chorus's installed version (as ``chorus --version`` shows it), or ``unknown``."""
    try:
        return version("chorus")
    except PackageNotFoundError:
        return "unknown"


def process_registry() -> CollectorRegistry:
    """A registry of its own with the process, Python and build-info collectors."""
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    Info("chorus_build", "The running chorus's version.", registry=registry).info(
        {"version": chorus_version()}
    )
    return registry

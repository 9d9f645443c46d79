"""The background queue's vocabulary: jobs, status, the ``BackgroundQueue`` ABC.

Imported through ``memory.jobs``, which adds the implementations. This module
needs neither Redis nor rq, so the outbox and the in-process queue can use it.
"""

from __future__ import annotations

import importlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

__all__ = [
    "BackgroundQueue",
    "FailedJob",
    "JobSpec",
    "QueueStatus",
    "error_line",
    "import_function",
    "mask_url",
]

_PASSWORD_PARAM = re.compile(r"(?i)([?&]password=)[^&#]*")


@dataclass(frozen=True)
class JobSpec:
    """One background job, described by plain values only."""

    func: str
    args: tuple[Any, ...]
    session_id: str
    job_id: str
    description: str = ""
    trace: str = ""
    """The W3C ``traceparent`` of the turn that queued it (``""``: none); see ``_traced``."""

    def __post_init__(self) -> None:
        if "." not in self.func:
            raise ValueError(f"func must be a dotted path, got {self.func!r}")
        if not self.job_id or not self.session_id:
            raise ValueError("job_id and session_id must not be empty")
        object.__setattr__(self, "args", tuple(self.args))
        try:
            json.dumps(self.args)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"args of {self.func} must be JSON-serialisable") from exc


@dataclass(frozen=True)
class FailedJob:
    """A job that failed for good; ``error`` is the last line of its traceback."""

    job_id: str
    func: str
    session_id: str
    error: str
    failed_at: float | None


@dataclass
class QueueStatus:
    """Counts for ``chorus queue status`` and the admin stats."""

    backend: str
    queued: int = 0
    started: int = 0
    deferred: int = 0
    scheduled: int = 0
    failed: int = 0
    outbox: int = 0
    reachable: bool = True
    failed_jobs: list[FailedJob] = field(default_factory=list)


class BackgroundQueue(ABC):
    """Where the memory manager and the agent send work that the reply must not wait for."""

    @abstractmethod
    def enqueue(self, job: JobSpec) -> None:
        """Hand ``job`` over; never raises for infrastructure trouble, never blocks for long."""

    @abstractmethod
    def status(self) -> QueueStatus:
        """Current counts; an unreachable backend reports ``reachable=False``."""

    @abstractmethod
    def retry_failed(self) -> int:
        """Requeue every failed job; returns how many were requeued."""

    @abstractmethod
    def flush(self, timeout: float | None = None) -> bool:
        """Barrier: False on timeout.

        In-process: wait until every job enqueued so far has run. On Redis: wait
        until the outbox is drained (the jobs are in Redis, not necessarily run).
        """

    @abstractmethod
    def close(self, timeout: float = 5.0, *, drain: bool = True) -> None:
        """Stop taking jobs and drain what is pending for at most ``timeout`` seconds."""


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, fit for a log line."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparseable url>"
    if password is not None:
        host = parts.netloc.rpartition("@")[2]
        at = url.index(parts.netloc)
        masked = f"{parts.username or ''}:***@{host}"
        url = url[:at] + masked + url[at + len(parts.netloc) :]
    return _PASSWORD_PARAM.sub(r"\1***", url)


def import_function(path: str) -> Callable[..., Any]:
    """The module-level callable named by a dotted ``path``, imported by name."""
    module_name, _, name = path.rpartition(".")
    func = getattr(importlib.import_module(module_name), name)
    if not callable(func):
        raise TypeError(f"{path} is not callable")
    return cast(Callable[..., Any], func)


def error_line(text: str) -> str:
    """The last non-empty line of a traceback (the exception), at most 300 characters."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""

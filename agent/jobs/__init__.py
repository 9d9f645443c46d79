"""Background jobs of the agent: the job functions, what they run with, how they are enqueued.

- Job functions (``sync_turn``, ``rewind``, ``queue_prefetch``, ``end_session``,
  ``approved_write`` and ``prefetch``, the name of earlier versions) run on a worker, never on the
  request path. They are enqueued by dotted name, ``agent.jobs.<name>``
  (``JOBS_MODULE``): these names are the contract with every queue, those
  written by earlier versions included, so they stay importable from here.
- ``JobContext`` is what they need, set up once per process (``configure``);
  ``JobLoop`` keeps one event loop per job thread for their async work.
- ``JobScheduler`` enqueues them for a live agent.
- ``ProviderSource`` / ``build_manager``: the configured external memory
  provider, and a ``MemoryManager`` holding it for one session.
- ``summarize_for_handoff`` / ``checked_summary``: the handoff summary the
  session-end job stores for the next session.
"""

from agent.jobs._approved import approved_write
from agent.jobs._context import JobContext
from agent.jobs._handoff import (
    HANDOFF_MAX_CHARS,
    HANDOFF_PROMPT,
    HANDOFF_SUMMARY_MAX,
    checked_summary,
    summarize_for_handoff,
)
from agent.jobs._jobs import (
    configure,
    context,
    end_session,
    prefetch,
    queue_prefetch,
    rewind,
    shutdown,
    sync_turn,
)
from agent.jobs._loop import JobLoop
from agent.jobs._provider_source import ProviderSource, build_manager
from agent.jobs._scheduler import JOB_NAMES, JOBS_MODULE, JobScheduler, approved_write_job

__all__ = [
    "HANDOFF_MAX_CHARS",
    "HANDOFF_PROMPT",
    "HANDOFF_SUMMARY_MAX",
    "JOBS_MODULE",
    "JOB_NAMES",
    "JobContext",
    "JobLoop",
    "JobScheduler",
    "ProviderSource",
    "approved_write",
    "approved_write_job",
    "build_manager",
    "checked_summary",
    "configure",
    "context",
    "end_session",
    "prefetch",
    "queue_prefetch",
    "rewind",
    "shutdown",
    "summarize_for_handoff",
    "sync_turn",
]

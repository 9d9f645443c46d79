"""Whether the configured provider may run where ``CHORUS_HOME`` may be thrown away.

With ``database.url`` set, several replicas share PostgreSQL but each has its own
``CHORUS_HOME``, which the shipped compose and Kubernetes files keep on a tmpfs
or an ``emptyDir``: a provider that keeps its state there (its
:attr:`~memory.providers.MemoryProvider.local_state`) would lose it on the
next restart and never share it with the other replicas. Such a provider runs
only when the operator declares the home persistent (``memory.local_state:
persistent``); the gateway, the worker and ``chorus doctor`` say so otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from memory.providers import MemoryProvider
from plugins.errors import PluginError

logger = logging.getLogger(__name__)

PERSISTENT = "persistent"


def local_state_refusal(
    name: str | None,
    chorus_home: Path,
    load: Callable[[str, Path], MemoryProvider],
    *,
    shared_database: bool,
    local_state: str,
) -> str | None:
    """Why the provider ``name`` (built by ``load``) may not run here, or None when it may.

    A provider that cannot be loaded is not refused here: loading reports it.
    """
    if not name or not shared_database or local_state == PERSISTENT:
        return None
    try:
        kept = str(getattr(load(name, chorus_home), "local_state", "") or "")
    except PluginError as exc:
        logger.debug("memory provider %s not loaded (%s)", name, type(exc).__name__)
        return None
    if not kept:
        return None
    return (
        f"memory.provider {name} keeps {kept} in CHORUS_HOME ({chorus_home}), but with "
        "database.url set each replica has its own CHORUS_HOME and it may be thrown away "
        "on restart, losing them. Put CHORUS_HOME on one persistent volume that every "
        "gateway and worker shares and set memory.local_state: persistent, or choose "
        "another memory.provider."
    )

"""Importing the official ``supermemory`` SDK on first use, so listing providers works without it.

:func:`installed` asks the import system whether the SDK can be found without
importing it; :func:`load` imports it when a session starts and raises
:class:`SupermemoryUnavailable` with the install hint when it cannot.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from plugins.errors import PluginError
from plugins.memory._remote import findable

SDK = "supermemory"
INSTALL_HINT = "pip install 'chorus[supermemory]'"
UNAVAILABLE_REASON = (
    f"the supermemory memory provider needs the supermemory SDK, install with {INSTALL_HINT}"
)


class SupermemoryUnavailable(PluginError, RuntimeError):
    """The supermemory SDK cannot be imported here; the message says how to fix it."""


def installed() -> bool:
    """Whether the SDK can be imported (found by the import system; nothing is run)."""
    return findable(SDK)


def load() -> ModuleType:
    """The ``supermemory`` module.

    Raises:
        SupermemoryUnavailable: it does not import.
    """
    try:
        return importlib.import_module(SDK)
    except ImportError as exc:
        raise SupermemoryUnavailable(UNAVAILABLE_REASON) from exc

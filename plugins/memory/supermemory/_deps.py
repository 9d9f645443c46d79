"""Importing httpx on first use, so listing providers works without it.

:func:`installed` asks the import system whether httpx can be found without
importing it; :func:`load` imports it when a session starts and raises
:class:`SupermemoryUnavailable` with the install hint when it cannot.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from plugins.errors import PluginError

INSTALL_HINT = "pip install 'chorus[supermemory]'"
UNAVAILABLE_REASON = f"the supermemory memory provider is unavailable, install with {INSTALL_HINT}"


class SupermemoryUnavailable(PluginError, RuntimeError):
    """httpx cannot be imported here; the message says how to fix it."""


def installed() -> bool:
    """Whether httpx can be imported (found by the import system; nothing is run)."""
    try:
        return importlib.util.find_spec("httpx") is not None
    except (ImportError, ValueError):
        return False


def load() -> ModuleType:
    """The ``httpx`` module.

    Raises:
        SupermemoryUnavailable: it does not import.
    """
    try:
        return importlib.import_module("httpx")
    except ImportError as exc:
        raise SupermemoryUnavailable(UNAVAILABLE_REASON) from exc

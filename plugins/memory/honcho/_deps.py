"""Importing the ``honcho`` SDK (the ``honcho-ai`` package) on first use, never at module level.

Listing providers must stay cheap (the SDK takes most of a second to import:
pydantic models for every route) and must work where it is not installed.
:func:`installed` only asks the import system whether the package can be found;
:func:`load` imports it when a session starts and says how to install it when
it cannot.

httpx, which the SDK sends through, logs every request's URL at INFO, and the
URL of the recall before a turn carries the user's message (``search_query``);
so unless something already chose its level, the ``httpx`` logger is raised to
WARNING (as the Telegram adapter does), keeping message text out of INFO logs.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from types import ModuleType

from plugins.errors import PluginError

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'chorus[honcho]'"
UNAVAILABLE_REASON = f"the honcho memory provider needs the honcho-ai package: {INSTALL_HINT}"

_lock = threading.Lock()
_failed = False


class HonchoUnavailable(PluginError, RuntimeError):
    """honcho-ai cannot be imported here; the message says how to fix it."""


def installed() -> bool:
    """Whether honcho-ai can be imported (found, and no import of it failed yet)."""
    if _failed:
        return False
    try:
        return importlib.util.find_spec("honcho") is not None
    except (ImportError, ValueError):
        return False


def load() -> ModuleType:
    """The ``honcho`` module, imported once per process.

    Raises:
        HonchoUnavailable: honcho-ai does not import.
    """
    global _failed
    with _lock:
        try:
            module = importlib.import_module("honcho")
        except ImportError as exc:
            _failed = True
            logger.warning("%s (%s)", UNAVAILABLE_REASON, type(exc).__name__)
            raise HonchoUnavailable(UNAVAILABLE_REASON) from exc
        http_logger = logging.getLogger("httpx")
        if http_logger.level == logging.NOTSET:
            http_logger.setLevel(logging.WARNING)
        return module

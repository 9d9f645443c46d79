"""httpx, the one dependency, imported on first use.

Listing providers must stay cheap and work without the extra installed, so
:func:`installed` only asks the import system; :func:`load` imports httpx
when a session starts and says how to install it when it is missing.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from plugins.errors import PluginError

INSTALL_HINT = "pip install 'chorus[openviking]'"
UNAVAILABLE_REASON = f"the openviking memory provider is unavailable, install with {INSTALL_HINT}"


class OpenVikingUnavailable(PluginError, RuntimeError):
    """httpx cannot be imported here; the message says how to fix it."""


def installed() -> bool:
    try:
        return importlib.util.find_spec("httpx") is not None
    except (ImportError, ValueError):
        return False


def load() -> ModuleType:
    try:
        return importlib.import_module("httpx")
    except ImportError as exc:
        raise OpenVikingUnavailable(UNAVAILABLE_REASON) from exc

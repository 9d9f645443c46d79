"""Importing ``hindsight_client`` on first use, never at module level.

Listing providers must stay cheap (the client takes about two seconds to
import: it loads a few hundred generated models) and must work where the
package is not installed. :func:`installed` only asks the import system
whether the package can be found; :func:`load` imports it when a session starts
and says how to install it when it cannot.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from dataclasses import dataclass
from typing import Any

from plugins.errors import PluginError

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'chorus[hindsight]'"
UNAVAILABLE_REASON = (
    f"the hindsight memory provider needs the hindsight-client package: {INSTALL_HINT}"
)

_lock = threading.Lock()
_failed = False
_loaded: Sdk | None = None


class HindsightUnavailable(PluginError, RuntimeError):
    """hindsight-client cannot be imported here; the message says how to fix it."""


@dataclass(frozen=True)
class Sdk:
    """What the provider uses of the client: the class and the HTTP error type."""

    client_class: Any
    api_exception: type[BaseException]


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def installed() -> bool:
    """Whether hindsight-client can be imported (found, and no import of it failed yet)."""
    return not _failed and _findable("hindsight_client") and _findable("hindsight_client_api")


def load() -> Sdk:
    """The client, imported once per process.

    Raises:
        HindsightUnavailable: hindsight-client does not import.
    """
    global _failed, _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        try:
            client = importlib.import_module("hindsight_client")
            exceptions = importlib.import_module("hindsight_client_api.exceptions")
        except ImportError as exc:
            _failed = True
            logger.warning("%s (%s)", UNAVAILABLE_REASON, type(exc).__name__)
            raise HindsightUnavailable(UNAVAILABLE_REASON) from exc
        _loaded = Sdk(client.Hindsight, exceptions.ApiException)
        return _loaded

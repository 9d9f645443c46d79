"""A provider's client library, imported on first use and never at module level.

Listing providers must stay cheap (some clients take seconds to import) and
must work where a client is not installed. :meth:`ClientLibrary.installed`
only asks the import system whether the modules can be found (and whether an
import of them failed already); :meth:`ClientLibrary.load` imports them when
a session starts and raises the provider's unavailable error, with the install
hint, when it cannot.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

from .errors import ProviderUnavailable

__all__ = ["ClientLibrary", "findable", "install_hint"]

logger = logging.getLogger(__name__)


def findable(*modules: str) -> bool:
    """Whether every one of ``modules`` can be imported (found by the import system, not run)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in modules)
    except (ImportError, ValueError):
        return False


def install_hint(provider: str) -> str:
    """How to install what the provider ``provider`` needs: its extra of chorus."""
    return f"pip install 'chorus[{provider}]'"


class ClientLibrary:
    """The modules a provider needs (``modules[0]`` is the one :meth:`load` returns).

    ``reason`` is the :attr:`UNAVAILABLE_REASON` shown by ``chorus memory
    status`` and raised as ``error`` when the import fails; ``after`` runs
    after every load (to quiet the library's loggers, even if a test or an
    operator reset them since).
    """

    def __init__(
        self,
        modules: Sequence[str],
        reason: str,
        *,
        error: type[ProviderUnavailable] = ProviderUnavailable,
        remember_failure: bool = True,
        after: Callable[[ModuleType], None] | None = None,
    ) -> None:
        self.modules = tuple(modules)
        self.UNAVAILABLE_REASON = reason
        self._error = error
        self._remember = remember_failure
        self._after = after
        self._lock = threading.Lock()
        self.failed = False

    def installed(self) -> bool:
        """Whether the modules can be imported (found, and no import of them failed yet)."""
        return not self.failed and findable(*self.modules)

    def load(self) -> ModuleType:
        """The first module (Python imports each module once per process).

        Raises:
            ProviderUnavailable: (the provider's subclass) a module does not import.
        """
        with self._lock:
            try:
                loaded = [importlib.import_module(name) for name in self.modules]
            except ImportError as exc:
                if self._remember:
                    self.failed = True
                    logger.warning("%s (%s)", self.UNAVAILABLE_REASON, type(exc).__name__)
                raise self._error(self.UNAVAILABLE_REASON) from exc
            if self._after is not None:
                self._after(loaded[0])
            return loaded[0]

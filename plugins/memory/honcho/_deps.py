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

import logging
from types import ModuleType

from plugins.memory._kit import ClientLibrary, ProviderUnavailable, install_hint

INSTALL_HINT = install_hint("honcho")
UNAVAILABLE_REASON = f"the honcho memory provider needs the honcho-ai package: {INSTALL_HINT}"

_failed = False
"""Set to make the SDK count as missing (an import of it failed in this process)."""


class HonchoUnavailable(ProviderUnavailable):
    """honcho-ai cannot be imported here; the message says how to fix it."""


def _quiet_httpx(module: ModuleType) -> None:
    http_logger = logging.getLogger("httpx")
    if http_logger.level == logging.NOTSET:
        http_logger.setLevel(logging.WARNING)


LIBRARY = ClientLibrary(
    ("honcho",), UNAVAILABLE_REASON, error=HonchoUnavailable, after=_quiet_httpx
)


def installed() -> bool:
    """Whether honcho-ai can be imported (found, and no import of it failed yet)."""
    return not _failed and LIBRARY.installed()


def load() -> ModuleType:
    """The ``honcho`` module, imported once per process; HonchoUnavailable when it cannot."""
    return LIBRARY.load()

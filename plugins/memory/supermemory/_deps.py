"""Importing the official ``supermemory`` SDK on first use, so listing providers works without it.

``LIBRARY.installed()`` asks the import system whether the SDK can be found without
importing it; ``LIBRARY.load()`` imports it when a session starts and raises
:class:`SupermemoryUnavailable` with the install hint when it cannot.
"""

from __future__ import annotations

from plugins.memory._kit import ClientLibrary, ProviderUnavailable, install_hint

SDK = "supermemory"
INSTALL_HINT = install_hint("supermemory")
UNAVAILABLE_REASON = (
    f"the supermemory memory provider needs the supermemory SDK, install with {INSTALL_HINT}"
)


class SupermemoryUnavailable(ProviderUnavailable):
    """The supermemory SDK cannot be imported here; the message says how to fix it."""


LIBRARY = ClientLibrary(
    (SDK,), UNAVAILABLE_REASON, error=SupermemoryUnavailable, remember_failure=False
)

"""httpx, the one dependency, imported on first use.

Listing providers must stay cheap and work without the extra installed, so
``LIBRARY.installed()`` only asks the import system; ``LIBRARY.load()`` imports httpx
when a session starts and says how to install it when it is missing.
"""

from __future__ import annotations

from plugins.memory._kit import ClientLibrary, ProviderUnavailable, install_hint

INSTALL_HINT = install_hint("openviking")
UNAVAILABLE_REASON = f"the openviking memory provider is unavailable, install with {INSTALL_HINT}"


class OpenVikingUnavailable(ProviderUnavailable):
    """httpx cannot be imported here; the message says how to fix it."""


LIBRARY = ClientLibrary(
    ("httpx",), UNAVAILABLE_REASON, error=OpenVikingUnavailable, remember_failure=False
)

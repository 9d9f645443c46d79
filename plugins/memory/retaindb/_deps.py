"""httpx, the one dependency, imported on first use.

Listing providers must stay cheap and work without the extra installed, so
``LIBRARY.installed()`` only asks the import system; ``LIBRARY.load()`` imports httpx
when a session starts and says how to install it when it is missing.
"""

from __future__ import annotations

from plugins.memory._kit import ClientLibrary, ProviderUnavailable, install_hint

INSTALL_HINT = install_hint("retaindb")
UNAVAILABLE_REASON = f"the retaindb memory provider is unavailable, install with {INSTALL_HINT}"


class RetainDBUnavailable(ProviderUnavailable):
    """httpx cannot be imported here; the message says how to fix it."""


LIBRARY = ClientLibrary(
    ("httpx",), UNAVAILABLE_REASON, error=RetainDBUnavailable, remember_failure=False
)

"""Importing ``hindsight_client`` on first use, never at module level.

Listing providers must stay cheap (the client takes about two seconds to
import: it loads a few hundred generated models) and must work where the
package is not installed (see :mod:`plugins.memory._kit.library`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import ClientLibrary, ProviderUnavailable, install_hint

INSTALL_HINT = install_hint("hindsight")
UNAVAILABLE_REASON = (
    f"the hindsight memory provider needs the hindsight-client package: {INSTALL_HINT}"
)


class HindsightUnavailable(ProviderUnavailable):
    """hindsight-client cannot be imported here; the message says how to fix it."""


LIBRARY = ClientLibrary(
    ("hindsight_client", "hindsight_client_api"),
    UNAVAILABLE_REASON,
    error=HindsightUnavailable,
)


@dataclass(frozen=True)
class Sdk:
    """What the provider uses of the client: the class and the HTTP error type."""

    client_class: Any
    api_exception: type[BaseException]


def installed() -> bool:
    """Whether hindsight-client can be imported (found, and no import of it failed yet)."""
    return LIBRARY.installed()


def load() -> Sdk:
    """The client, imported once per process; HindsightUnavailable when it does not import."""
    client = LIBRARY.load()
    exceptions = importlib.import_module("hindsight_client_api.exceptions")
    return Sdk(client.Hindsight, exceptions.ApiException)

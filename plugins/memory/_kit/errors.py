"""One family for every memory provider's errors: :class:`ProviderError` and its few kinds.

A provider raises one of these kinds (or a class of its own under one, named
for it where other code catches it by name)::

    ProviderError (PluginError)      root of every provider's errors
    ├── ProviderUnavailable          the backend cannot be used now; later it may
    │   │                            (down, timing out, its client not installed)
    │   ├── Paused                   the circuit breaker is open
    │   └── BackendFailed            one call failed; ``cause`` names the exception
    │                                class or HTTP status, never its text
    ├── Refused                      the backend refused this request: sending it
    │   │                            again will not help (a 4xx other than 429)
    │   └── NotFound                 no such memory, file or route
    ├── BadConfig (PluginConfigError) the provider's settings are not usable
    ├── BadToolInput (ValueError)    a tool's arguments are wrong; the text goes back
    │                                to the model
    └── NotReady                     a call before ``initialize`` or after ``shutdown``

:func:`plugins.memory._kit.tool_calls.answer_tool_call` turns each kind into the
JSON tool error; :class:`plugins.memory._kit.guard.Guard` counts the kinds that
say the backend is unwell and leaves the others alone.
"""

from __future__ import annotations

from plugins.errors import PluginConfigError, PluginError

__all__ = [
    "BackendFailed",
    "BadConfig",
    "BadToolInput",
    "NotFound",
    "NotReady",
    "Paused",
    "ProviderError",
    "ProviderUnavailable",
    "Refused",
    "describe",
    "status_of",
]


class ProviderError(PluginError):
    """Root of every memory provider's errors."""


class ProviderUnavailable(ProviderError, RuntimeError):
    """The backend cannot be used now (transient); the message says why, never memory text."""


class Paused(ProviderUnavailable):
    """The circuit breaker is open; the message says for how long."""


class BackendFailed(ProviderUnavailable):
    """A backend call failed; ``cause`` is the exception class or HTTP status, never its text.

    ``permanent`` marks a failure that sending the same request again will not
    mend (a 4xx answer): the breaker does not count it.
    """

    def __init__(
        self,
        operation: str,
        cause: str,
        *,
        provider: str = "",
        permanent: bool = False,
        status: int | None = None,
    ) -> None:
        self.operation = operation
        self.cause = cause
        self.provider = provider
        self.permanent = permanent
        self.status = status
        prefix = f"{provider} " if provider else ""
        super().__init__(f"{prefix}{operation} failed: {cause}")


class Refused(ProviderError, RuntimeError):
    """The backend refused this one request; it says nothing about the backend's health."""


class NotFound(Refused):
    """The backend has no such memory, file or route (an HTTP 404)."""


class BadConfig(ProviderError, PluginConfigError):
    """A provider's settings are not usable; the message names the setting, never a secret."""


class BadToolInput(ProviderError, ValueError):
    """A tool's arguments are wrong; the message goes back to the model as the tool error."""


class NotReady(ProviderError, RuntimeError):
    """The provider is not initialised for a session (or was shut down)."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries as ``status`` (None without one)."""
    status = getattr(exc, "status", None)
    usable = isinstance(status, int) and not isinstance(status, bool) and status > 0
    return status if usable else None


def describe(exc: BaseException) -> str:
    """The class of ``exc`` and its HTTP status, if it has one: never its text."""
    status = status_of(exc)
    return type(exc).__name__ if status is None else f"{type(exc).__name__} {status}"

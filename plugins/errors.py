"""Errors raised by the plugins package.

Exception tree (a memory provider's errors are named ``provider.Class``; they all
belong to one family, :class:`plugins.memory._kit.ProviderError`, whose kinds
say what a caller may do about them)::

    PluginError                         root of every error this package raises
    ├── PluginNotFoundError             no plugin of that name is installed
    ├── PluginLoadError                 the plugin exists but could not be imported or
    │                                   produced no usable provider
    ├── PluginConfigError               a provider's settings are missing or invalid
    └── ProviderError                   a memory provider's error (plugins.memory._kit)
        ├── ProviderUnavailable         the backend cannot be used now; later it may
        │   ├── Paused                  the circuit breaker is open
        │   │   ├── hindsight.HindsightPaused
        │   │   ├── honcho.HonchoPaused
        │   │   └── mem0.Mem0Paused
        │   ├── BackendFailed           one call failed (class or status, never text);
        │   │   │                       ``permanent`` when retrying will not help
        │   │   └── honcho.HonchoFailed
        │   ├── hindsight.HindsightUnavailable      the client library cannot be imported
        │   ├── honcho.HonchoUnavailable            (the same, for each provider)
        │   ├── mem0.Mem0Unavailable
        │   ├── openviking.OpenVikingUnavailable
        │   ├── retaindb.RetainDBUnavailable
        │   ├── supermemory.SupermemoryUnavailable
        │   ├── mem0.StoreBusy          the local store is held by another process
        │   └── byterover.BrvError      a brv run did not succeed
        │       ├── byterover.BrvPaused     brv is paused (also a Paused)
        │       ├── byterover.BrvMissing    the brv CLI is not installed
        │       ├── byterover.BrvTimeout    brv did not finish in time
        │       └── byterover.BrvFailed     brv exited with an error
        │           └── byterover.BrvReported  brv exited 0 but its answer says it failed
        ├── Refused                     the backend refused this request (retrying will
        │   │                           not help)
        │   ├── NotFound                no such memory, file or route (404)
        │   ├── supermemory.Rejected    Supermemory refused the request (a 4xx)
        │   └── holographic.StoreError  a request the fact store cannot carry out
        ├── BadConfig                   a provider's settings are not usable (also a
        │                               PluginConfigError)
        ├── BadToolInput                bad tool input (a ValueError); the text goes back
        │   │                           to the model
        │   ├── byterover.ToolError     each provider's own
        │   ├── hindsight.ToolError
        │   ├── holographic.ToolError
        │   ├── honcho.ToolError
        │   ├── mem0.ToolError
        │   ├── openviking.ToolError
        │   ├── retaindb.ToolError
        │   └── supermemory.ToolError
        └── NotReady                    a call before ``initialize`` (or after ``shutdown``)

The text names the plugin and, for a failed import, the exception class and
message; it is meant for operators (logs, ``chorus doctor``), not for chat users
(a ``ToolError``'s text is the exception: it is meant for the model).
"""

from __future__ import annotations


class PluginError(Exception):
    """Root of the plugins package's errors."""


class PluginNotFoundError(PluginError, LookupError):
    """No bundled or user plugin has the requested name."""


class PluginLoadError(PluginError):
    """A plugin failed to import, to register, or to build its provider."""


class PluginConfigError(PluginError, ValueError):
    """A provider's ``memory.providers.<name>`` settings (or its secrets) are not usable."""

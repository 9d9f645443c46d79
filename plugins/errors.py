"""Errors raised by the plugins package.

Exception tree (a provider's errors are named ``provider.Class``; each keeps the
built-in base it had, ``RuntimeError`` or ``ValueError``, beside ``PluginError``)::

    PluginError                         root of every error this package raises
    ├── PluginNotFoundError             no plugin of that name is installed
    ├── PluginLoadError                 the plugin exists but could not be imported or
    │                                   produced no usable provider
    ├── PluginConfigError               a provider's settings are missing or invalid
    ├── byterover.BrvError              a brv run did not succeed
    │   ├── byterover.BrvMissing        the brv CLI is not installed
    │   ├── byterover.BrvTimeout        brv did not finish in time
    │   ├── byterover.BrvFailed         brv exited with an error
    │   │   └── byterover.BrvReported   brv exited 0 but its answer says it failed
    │   └── byterover.BrvPaused         paused after repeated failures
    ├── byterover.ToolError             bad tool input; the text goes back to the model
    ├── hindsight.HindsightUnavailable  hindsight-client cannot be imported
    ├── hindsight.HindsightPaused       paused after repeated failures
    ├── hindsight.BackendFailed         a Hindsight call failed
    ├── hindsight.ToolError             bad tool input
    ├── holographic.StoreError          a request the fact store cannot carry out
    ├── holographic.ToolError           bad tool input
    ├── honcho.HonchoUnavailable        honcho-ai cannot be imported
    ├── honcho.HonchoPaused             paused after repeated failures
    ├── honcho.HonchoFailed             a Honcho call failed
    ├── honcho.ToolError                bad tool input
    ├── mem0.StoreBusy                  the local store is held by another process
    ├── mem0.Mem0Unavailable            mem0 (or qdrant-client) cannot be imported
    ├── mem0.Mem0Paused                 paused after repeated failures
    ├── mem0.BackendFailed              a mem0 call failed
    ├── mem0.ToolError                  bad tool input
    ├── openviking.BackendFailed        an OpenViking call failed
    ├── openviking.Paused               the breaker is open
    ├── openviking.NotFound             the server answered 404 / NOT_FOUND
    ├── openviking.OpenVikingUnavailable httpx cannot be imported
    ├── openviking.ToolError            bad tool input
    ├── retaindb.BackendFailed          a RetainDB call failed
    ├── retaindb.Paused                 the breaker is open
    ├── retaindb.NotFound               404: no such memory, file or route
    ├── retaindb.RetainDBUnavailable    httpx cannot be imported
    ├── retaindb.ToolError              bad tool input
    ├── supermemory.Paused              paused after repeated failures
    ├── supermemory.BackendFailed       a call failed (network, timeout, 429/5xx)
    ├── supermemory.Rejected            Supermemory refused the request (a 4xx)
    ├── supermemory.SupermemoryUnavailable the supermemory SDK cannot be imported
    └── supermemory.ToolError           bad tool input

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

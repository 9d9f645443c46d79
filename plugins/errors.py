"""Errors raised by the plugins package.

Exception tree::

    PluginError                 root of every error this package raises
    ├── PluginNotFoundError     no plugin of that name is installed
    ├── PluginLoadError         the plugin exists but could not be imported or
    │                           produced no usable provider
    └── PluginConfigError       a provider's settings are missing or invalid

The text names the plugin and, for a failed import, the exception class and
message; it is meant for operators (logs, ``chorus doctor``), not for chat users.
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

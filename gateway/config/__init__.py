"""Configuration: ``CHORUS_HOME/config.yaml`` and the environment, as one ``Settings``.

This package is the only code that reads configuration files and the
environment; every other part gets its section passed in.
"""

from gateway.config._budgets import BudgetLimits, BudgetSettings
from gateway.config._edit import set_memory_provider, set_secret
from gateway.config._home import ensure_home, require_private_home, resolve_home
from gateway.config._live import RESTART_ONLY_KEYS, SETTING_EFFECTS, ConfigWatcher, LiveSettings
from gateway.config._loader import (
    CONFIG_FILE_NAME,
    Settings,
    database_location,
    load_settings,
    secret_paths,
    secrets_environment,
)
from gateway.config._sections import AuthSettings, GatewaySettings, HTTPSettings, SessionsSettings

__all__ = [
    "CONFIG_FILE_NAME",
    "RESTART_ONLY_KEYS",
    "SETTING_EFFECTS",
    "AuthSettings",
    "BudgetLimits",
    "BudgetSettings",
    "ConfigWatcher",
    "GatewaySettings",
    "HTTPSettings",
    "LiveSettings",
    "SessionsSettings",
    "Settings",
    "database_location",
    "ensure_home",
    "load_settings",
    "require_private_home",
    "resolve_home",
    "secret_paths",
    "secrets_environment",
    "set_memory_provider",
    "set_secret",
]

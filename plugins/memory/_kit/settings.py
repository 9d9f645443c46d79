"""Reading a provider's settings: its ``memory.providers.<name>`` section, then the environment.

A bad value falls back to its default with one WARNING naming the setting,
never the value, so a typo costs recall quality, not the session.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SettingsReader", "environment", "http_url", "number_in", "section_of", "setting"]

logger = logging.getLogger(__name__)


def section_of(config: Any) -> Mapping[str, Any]:
    """The provider's config section, ``{}`` when it is not a mapping."""
    return config if isinstance(config, Mapping) else {}


def environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """``environ``, else ``os.environ``."""
    return os.environ if environ is None else environ


def setting(section: Mapping[str, Any], environ: Mapping[str, str], key: str, var: str) -> Any:
    """``key`` of the provider's config section, else the environment variable ``var``
    (when named); strings stripped, a blank one counts as unset (None)."""
    value = section.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = environ.get(var) if var else None
    return (value.strip() or None) if isinstance(value, str) else value


def http_url(value: Any, default: str, where: str) -> str:
    """``value`` as an http(s) base URL without its trailing slash; ``default`` (with a
    WARNING naming the setting ``where``) when it is set to something else."""
    url = value or default
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        logger.warning("%s must be an http(s) URL; default", where)
        url = default
    return url.rstrip("/")


def number_in(value: Any, default: float, low: float, high: float, where: str) -> float:
    """``value`` as a number in ``[low, high]``; ``default`` when unset, or (with a
    WARNING naming the setting ``where``) when it is not such a number."""
    if value is None:
        return default
    try:
        number = float(value)
        if isinstance(value, bool) or not low <= number <= high:
            raise ValueError
    except (TypeError, ValueError):
        logger.warning("%s is out of range; default", where)
        return default
    return number


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class SettingsReader:
    """The settings of the provider ``provider`` from ``config`` and ``environ``.

    :meth:`get` reads a key from the config section, else from the environment
    variable the ``schema`` names for it; the typed readers fall back to their
    default with one WARNING (``memory.providers.<provider>.<key> must be ...;
    using the default``) when a value is set but unusable.
    """

    def __init__(
        self,
        provider: str,
        config: Any,
        environ: Mapping[str, str] | None,
        schema: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.prefix = f"memory.providers.{provider}"
        self.section = section_of(config)
        self.environ = environment(environ)
        self._env = {f["key"]: f["env_var"] for f in schema if f.get("env_var")}

    def get(self, key: str) -> Any:
        return setting(self.section, self.environ, key, self._env.get(key, ""))

    def warn(self, key: str, what: str, fallback: str = "the default") -> None:
        logger.warning("%s.%s must be %s; using %s", self.prefix, key, what, fallback)

    def number(
        self, key: str, default: float, low: float, high: float, *, above_low: bool = False
    ) -> float:
        """A number in ``[low, high]`` (``(low, high]`` when ``above_low``)."""
        value = self.get(key)
        if value is None:
            return default
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        low_ok = number > low if above_low else number >= low
        if isinstance(value, bool) or not (low_ok and number <= high):
            lowest = f"above {low:g}" if above_low else f"from {low:g}"
            self.warn(key, f"a number {lowest} to {high:g}")
            return default
        return number

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None or isinstance(value, bool):
            return default if value is None else value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        self.warn(key, "true or false")
        return default

    def choice(self, key: str, choices: Sequence[str], default: str) -> str:
        value = self.get(key)
        if value is None:
            return default
        text = str(value).strip().lower()
        if text not in choices:
            self.warn(key, "one of " + ", ".join(choices))
            return default
        return text

    def url(self, key: str, default: str) -> str:
        value = self.get(key) or default
        if not isinstance(value, str) or not value.startswith(("http://", "https://")):
            self.warn(key, "an http(s) URL")
            value = default
        return value.rstrip("/")

    def text(self, key: str, default: str = "") -> str:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.warn(key, "a string")
            return default
        return value

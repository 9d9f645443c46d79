"""Reading a provider's settings: its ``memory.providers.<name>`` section, then the environment.

A bad value falls back to its default with one WARNING naming the setting,
never the value, so a typo costs recall quality, not the session.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["environment", "http_url", "number_in", "section_of", "setting"]

logger = logging.getLogger(__name__)


def section_of(config: Any) -> Mapping[str, Any]:
    """The provider's config section, ``{}`` when it is not a mapping."""
    return config if isinstance(config, Mapping) else {}


def environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """``environ``, else ``os.environ``."""
    return os.environ if environ is None else environ


def setting(section: Mapping[str, Any], environ: Mapping[str, str], key: str, var: str) -> Any:
    """``key`` of the provider's config section, else the environment variable ``var``
    (when named); strings stripped, a blank one counts as unset."""
    value = section.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = environ.get(var) if var else None
    return value.strip() if isinstance(value, str) else value


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

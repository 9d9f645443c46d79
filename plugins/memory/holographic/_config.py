"""The provider's settings: ``memory.providers.holographic`` in config.yaml (given to
``initialize`` as ``config``), else ``CHORUS_HOME/providers/holographic/config.json``.

``hrr`` (bool, default true) turns the HRR score on when numpy is importable;
``prefetch_limit`` (int 1..20, default 5) is how many facts prefetch recalls.
A missing file means the defaults; an unreadable or malformed file, or a bad
value, means the defaults for what is wrong and a WARNING that names the
problem (never the file's content).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memory.providers import provider_dir

logger = logging.getLogger(__name__)

PROVIDER_NAME = "holographic"
CONFIG_FILE = "config.json"
MAX_PREFETCH_LIMIT = 20


@dataclass(frozen=True)
class Settings:
    hrr: bool = True
    prefetch_limit: int = 5


DEFAULTS = Settings()

SCHEMA: list[dict[str, Any]] = [
    {
        "key": "hrr",
        "description": "Score recall with holographic (HRR) vectors too; needs numpy "
        "(pip install 'chorus[holographic]'), ignored without it",
        "secret": False,
        "required": False,
        "default": DEFAULTS.hrr,
        "choices": [True, False],
    },
    {
        "key": "prefetch_limit",
        "description": f"How many facts to recall before each turn (1-{MAX_PREFETCH_LIMIT})",
        "secret": False,
        "required": False,
        "default": DEFAULTS.prefetch_limit,
    },
]


def config_path(chorus_home: Path) -> Path:
    return provider_dir(chorus_home, PROVIDER_NAME) / CONFIG_FILE


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "off", "0"):
        return False
    return None


def _limit(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 1 <= number <= MAX_PREFETCH_LIMIT else None


def parse(values: dict[str, Any], *, source: str) -> Settings:
    """Settings from ``values``; a bad value falls back to its default with a WARNING."""
    hrr, limit = DEFAULTS.hrr, DEFAULTS.prefetch_limit
    if "hrr" in values:
        parsed = _bool(values["hrr"])
        if parsed is None:
            logger.warning("%s: 'hrr' must be true or false; using %s", source, hrr)
        else:
            hrr = parsed
    if "prefetch_limit" in values:
        parsed_limit = _limit(values["prefetch_limit"])
        if parsed_limit is None:
            logger.warning(
                "%s: 'prefetch_limit' must be an integer 1-%d; using %d",
                source,
                MAX_PREFETCH_LIMIT,
                limit,
            )
        else:
            limit = parsed_limit
    return Settings(hrr=hrr, prefetch_limit=limit)


def load(chorus_home: Path) -> Settings:
    """The saved settings under ``chorus_home``; defaults when absent or unreadable."""
    path = config_path(chorus_home)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return DEFAULTS
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s (%s); using the defaults", path, type(exc).__name__)
        return DEFAULTS
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        logger.warning("%s is not valid JSON; using the defaults", path)
        return DEFAULTS
    if not isinstance(data, dict):
        logger.warning("%s does not hold a JSON object; using the defaults", path)
        return DEFAULTS
    return parse(data, source=str(path))


def save(values: dict[str, Any], chorus_home: Path) -> Settings:
    """Validate ``values`` and write them (atomically, mode 0600) as the saved settings.

    Keys not in ``values`` keep their saved (or default) value; unknown keys are dropped.
    """
    merged = {**asdict(load(chorus_home)), **values}
    settings = parse(merged, source="holographic settings")
    path = config_path(chorus_home)
    data = {"hrr": settings.hrr, "prefetch_limit": settings.prefetch_limit}
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return settings

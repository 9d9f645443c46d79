"""The provider's settings: ``memory.providers.holographic`` in config.yaml (given to
``initialize`` as ``config``), else ``CHORUS_HOME/providers/holographic/config.json``.

``hrr`` (bool, default true) turns the HRR score on when numpy is importable;
``prefetch_limit`` (int 1..20, default 5) is how many facts prefetch recalls;
``probe_mode`` (``join`` or ``unbind``, default ``join``) is how ``probe``,
``related`` and ``reason`` find an entity's facts: by SQL joins over the
entity links, or by unbinding the facts' role–filler bank (needs ``hrr`` and
numpy; ``join`` is used without them). Both give the same answers on the
labelled set of ``bench/holographic_recall.py`` and at 1,000 facts, and the
joins are several times faster, so they are the default. ``embeddings``
(``auto`` or ``off``, default ``auto``) adds the LLM endpoint's
``/v1/embeddings`` of facts and queries as one more recall signal when the
endpoint offers it (``embedding_model``, default ``text-embedding-3-small``,
names the model).
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


PROBE_MODES = ("join", "unbind")
EMBEDDING_MODES = ("auto", "off")


@dataclass(frozen=True)
class Settings:
    hrr: bool = True
    prefetch_limit: int = 5
    probe_mode: str = "join"
    embeddings: str = "auto"
    embedding_model: str = "text-embedding-3-small"


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
    {
        "key": "probe_mode",
        "description": "How probe, related and reason find an entity's facts: join (SQL "
        "joins over the entity links) or unbind (the HRR algebra over the facts' "
        "role-filler bindings; needs hrr)",
        "secret": False,
        "required": False,
        "default": DEFAULTS.probe_mode,
        "choices": list(PROBE_MODES),
    },
    {
        "key": "embeddings",
        "description": "auto: rank recall with the LLM endpoint's /v1/embeddings too when "
        "it offers them; off: never call it",
        "secret": False,
        "required": False,
        "default": DEFAULTS.embeddings,
        "choices": list(EMBEDDING_MODES),
    },
    {
        "key": "embedding_model",
        "description": "The embedding model to ask the LLM endpoint for",
        "secret": False,
        "required": False,
        "default": DEFAULTS.embedding_model,
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


def _choice(values: dict[str, Any], key: str, choices: tuple[str, ...], source: str) -> str:
    default = str(getattr(DEFAULTS, key))
    if key not in values:
        return default
    value = values[key]
    if isinstance(value, bool) and key == "embeddings":
        value = "auto" if value else "off"  # YAML reads a bare off as false
    if isinstance(value, str) and value.strip().lower() in choices:
        return value.strip().lower()
    logger.warning("%s: '%s' must be one of %s; using %s", source, key, "|".join(choices), default)
    return default


def _model(values: dict[str, Any], source: str) -> str:
    value = values.get("embedding_model", DEFAULTS.embedding_model)
    if isinstance(value, str) and value.strip() and len(value) <= 200:
        return value.strip()
    logger.warning(
        "%s: 'embedding_model' must be a model name; using %s", source, DEFAULTS.embedding_model
    )
    return DEFAULTS.embedding_model


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
    return Settings(
        hrr=hrr,
        prefetch_limit=limit,
        probe_mode=_choice(values, "probe_mode", PROBE_MODES, source),
        embeddings=_choice(values, "embeddings", EMBEDDING_MODES, source),
        embedding_model=_model(values, source),
    )


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
    data = asdict(settings)
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

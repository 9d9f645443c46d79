"""Edits ``chorus memory setup`` makes: a section of ``config.yaml``, a variable in ``.env``.

Both files are rewritten whole and atomically (a temp file beside them, then a
rename), keeping their mode; a new file is created 0600. ``config.yaml`` is
re-serialised, so its comments do not survive an edit; ``.env`` keeps every
other line as it was.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from gateway.config._loader import CONFIG_FILE_NAME, SECRETS_FILE_NAME, _read_config_file
from gateway.errors import ConfigError

__all__ = ["set_memory_provider", "set_secret"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def set_memory_provider(home: Path, name: str, values: dict[str, Any]) -> Path:
    """Make ``name`` the provider (``memory.provider``) with ``memory.providers.<name>``."""
    path = home / CONFIG_FILE_NAME
    data = _read_config_file(path)
    memory = data.setdefault("memory", {})
    if not isinstance(memory, dict):
        raise ConfigError(f"{path}: 'memory' is not a mapping; fix it by hand first")
    providers = memory.setdefault("providers", {})
    if not isinstance(providers, dict):
        raise ConfigError(f"{path}: 'memory.providers' is not a mapping; fix it by hand first")
    memory["provider"] = name
    providers[name] = dict(values)
    _write(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def set_secret(home: Path, name: str, value: str) -> Path:
    """Set ``name=value`` in ``CHORUS_HOME/.env`` (0600), replacing an earlier line."""
    if not _ENV_NAME.fullmatch(name):
        raise ConfigError(f"{name!r} is not a variable name")
    if "\n" in value or "\r" in value:
        raise ConfigError(f"the value of {name} has a line break")
    path = home / SECRETS_FILE_NAME
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    pattern = re.compile(rf"^\s*(export\s+)?{re.escape(name)}\s*=")
    kept = [line for line in lines if not pattern.match(line)]
    kept.append(f"{name}={_quoted(value)}")
    _write(path, "\n".join(kept) + "\n")
    return path

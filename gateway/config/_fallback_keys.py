"""The keys of ``llm.fallbacks``: read from the variables each entry names, never from config.yaml.

Each entry's ``api_key_env`` names a variable of the environment or of
``CHORUS_HOME/.env`` (``<NAME>_FILE`` works as for every secret whose name ends in
``_KEY``, ``_TOKEN``, ``_SECRET`` or ``_PASSWORD``). A named variable that is unset
or empty is a ``ConfigError`` naming the entry and the variable; the value is
bound to the entry and registered as a secret, so no log line shows it.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.settings import LLMSettings
from gateway.errors import ConfigError
from gateway.logs import register_secret


def bind_fallback_keys(llm: LLMSettings, environ: Mapping[str, str]) -> None:
    """Give every fallback endpoint its key from ``environ``; raises ``ConfigError``."""
    missing: list[str] = []
    for index, entry in enumerate(llm.fallbacks):
        name = entry.api_key_env
        if name is None:
            continue
        value = environ.get(name, "").strip()
        if not value:
            missing.append(
                f"llm.fallbacks.{index}.api_key_env: the variable {name} (the key of "
                f"{entry.model}) is not set; set it in the environment or CHORUS_HOME/.env"
            )
            continue
        register_secret(value)
        entry.bind_key(value)
    if missing:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(missing))

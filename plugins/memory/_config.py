"""A provider's settings: its ``memory.providers.<name>`` section checked against its schema.

A provider describes its settings with ``get_config_schema()`` (fields with
``key``, ``description`` and optionally ``secret``, ``required``, ``default``,
``choices``, ``env_var``). chorus keeps the non-secret values in
``config.yaml`` under ``memory.providers.<name>`` and every secret in the
environment (or ``CHORUS_HOME/.env``) under the field's ``env_var``; a secret
found in ``config.yaml`` is refused, so none is ever written there.

:func:`resolve_config` turns a section plus the environment into the dict the
provider's ``initialize`` gets as ``config``: values coerced to the type of the
field's default, choices checked, required fields present. Every problem is a
:class:`~plugins.errors.PluginConfigError` naming the key, never a secret value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory.providers import MemoryProvider
from plugins.errors import PluginConfigError

__all__ = ["coerce", "config_fields", "resolve_config"]

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def config_fields(provider: MemoryProvider) -> list[dict[str, Any]]:
    """The provider's schema, each field a dict with at least ``key``; bad entries dropped."""
    try:
        schema = provider.get_config_schema()
    except Exception as exc:
        raise PluginConfigError(
            f"memory provider {provider.name!r}: get_config_schema() failed: {type(exc).__name__}"
        ) from None
    if not isinstance(schema, list):
        return []
    return [f for f in schema if isinstance(f, dict) and isinstance(f.get("key"), str)]


def _yaml_word(value: bool, choices: Any) -> str:
    """The choice a YAML boolean was written as: YAML reads a bare ``off``/``on``
    (``no``/``yes``) as false/true, so ``embeddings: off`` arrives as ``False``."""
    words = ("on", "yes", "true") if value else ("off", "no", "false")
    listed = choices if isinstance(choices, list) else []
    return next((w for w in words if w in listed), str(value).lower())


def coerce(field: Mapping[str, Any], value: Any, where: str) -> Any:
    """``value`` as the type of the field's default (bool, int, float, str), choices checked."""
    default = field.get("default")
    try:
        if isinstance(default, bool):
            if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                value = value.strip().lower() in _TRUE
            elif not isinstance(value, bool):
                raise ValueError
        elif isinstance(default, int) and not isinstance(value, bool):
            value = int(value)
        elif isinstance(default, float):
            value = float(value)
        elif isinstance(default, str) and isinstance(value, bool):
            value = _yaml_word(value, field.get("choices"))
        elif isinstance(default, str) and not isinstance(value, str):
            value = str(value)
    except (TypeError, ValueError):
        kind = type(default).__name__
        raise PluginConfigError(f"{where}: expected {kind}") from None
    choices = field.get("choices")
    if isinstance(choices, list) and choices and value not in choices:
        listed = ", ".join(str(c) for c in choices)
        raise PluginConfigError(f"{where}: expected one of {listed}")
    return value


def resolve_config(
    provider: MemoryProvider, section: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, Any]:
    """The provider's settings from its config section and the environment (see module)."""
    name = provider.name
    fields = config_fields(provider)
    known = {f["key"] for f in fields}
    prefix = f"memory.providers.{name}"
    unknown = sorted(set(section) - known)
    if unknown and fields:
        raise PluginConfigError(
            f"{prefix}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    resolved: dict[str, Any] = {k: v for k, v in section.items() if not fields}
    for field in fields:
        key, env_var = field["key"], field.get("env_var")
        where = f"{prefix}.{key}"
        if field.get("secret"):
            if key in section:
                hint = f"set {env_var}" if env_var else "set it in the environment"
                raise PluginConfigError(
                    f"{where} is a secret and does not belong in config.yaml; {hint} "
                    "in the environment or CHORUS_HOME/.env instead"
                )
            value = environ.get(env_var) if env_var else None
        elif key in section and section[key] is not None:
            value = section[key]
        else:
            value = environ.get(env_var) if env_var else None
        if value in (None, ""):
            if field.get("required"):
                source = f" (or {env_var})" if env_var else ""
                raise PluginConfigError(f"{where}{source} is required")
            if "default" in field:
                resolved[key] = field["default"]
            continue
        resolved[key] = coerce(field, value, where) if not field.get("secret") else value
    return resolved

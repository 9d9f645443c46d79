"""The one place that reads configuration: ``CHORUS_HOME/config.yaml`` and the environment.

Precedence, lowest first: built-in defaults, ``config.yaml``, the secrets file
``CHORUS_HOME/.env`` (0600 only), the well-known variables (``OPENAI_API_KEY``
and friends), then ``CHORUS_<SECTION>__<KEY>`` variables. Every lower layer
declares its own section model; this module composes them into ``Settings``
and hands each layer its part.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

import yaml
from dotenv import dotenv_values
from pydantic import BaseModel, Field, SecretStr, ValidationError, create_model
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from agent.settings import AgentSettings, CompressionSettings, LLMSettings
from agent.tools.settings import ToolsSettings
from agent.tracing import ObservabilitySettings
from gateway.adapters import PLATFORMS
from gateway.config._budgets import BudgetSettings
from gateway.config._fallback_keys import bind_fallback_keys
from gateway.config._home import ensure_home, resolve_home, unwritable_home
from gateway.config._secret_files import expand_secret_files
from gateway.config._sections import (
    AuthSettings,
    GatewaySettings,
    SecretsSettings,
    SessionsSettings,
    WorkerSettings,
)
from gateway.config._tree import deep_merge, get_path, set_path
from gateway.errors import ConfigError
from gateway.logs import register_secret
from gateway.media import MediaSettings
from memory.database import Location, configure_pool_size, location_of
from memory.paths import ChorusPaths
from memory.settings import RESTART, DatabaseSettings, MemorySettings, RedisSettings
from plugins.errors import PluginError
from plugins.memory import config_fields, load_memory_provider

logger = logging.getLogger(__name__)

CONFIG_FILE_NAME = "config.yaml"
SECRETS_FILE_NAME = ".env"
ENV_PREFIX = "CHORUS_"

WELL_KNOWN_ENV: dict[str, tuple[str, str]] = {
    "OPENAI_API_KEY": ("llm", "api_key"),
    "OPENAI_BASE_URL": ("llm", "base_url"),
    "DATABASE_URL": ("database", "url"),
    "CHORUS_SECRET_KEY": ("secrets", "key"),
    **{var: (spec.name, key) for spec in PLATFORMS for var, key in spec.env.items()},
}
"""Conventional variable names mapped to their setting (each platform names its own)."""

NON_SETTING_ENV = frozenset(
    {
        "CHORUS_HOME",
        "CHORUS_LOG_LEVEL",
        "CHORUS_LOG_CONTENT",
        "CHORUS_LOG_FORMAT",
        "CHORUS_SECRET_KEY",  # ``secrets.key`` (WELL_KNOWN_ENV)
    }
)
"""``CHORUS_*`` variables that are read elsewhere, not settings keys."""


class _CoreSettings(BaseSettings):
    """Everything chorus can be configured with, one section per concern.

    Each platform adds its own section (``telegram``, ``discord``, ``slack``)
    from its ``PlatformSpec``; code reads it with ``spec.section_of(settings)``.
    """

    model_config = SettingsConfigDict(extra="forbid", validate_default=True)

    home: Annotated[Path, RESTART]
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    sessions: SessionsSettings = Field(default_factory=SessionsSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)
    media: MediaSettings = Field(default_factory=MediaSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings() merges file and environment itself, so that every
        # error can name where the bad value came from.
        return (init_settings,)

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_FILE_NAME


if TYPE_CHECKING:
    Settings = _CoreSettings
else:
    Settings = create_model(
        "Settings",
        __base__=_CoreSettings,
        __module__=__name__,
        **{spec.name: (spec.settings, Field(default_factory=spec.settings)) for spec in PLATFORMS},
    )


def database_location(settings: _CoreSettings) -> Location:
    """Where the shared tables are: ``database.url`` if set, else ``CHORUS_HOME/state.db``."""
    configure_pool_size(settings.database.pool_size)
    try:
        return location_of(ChorusPaths(settings.home).state_db, settings.database.url)
    except ValueError as exc:
        raise ConfigError(f"database.url: {exc}") from exc


def load_settings(
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    create_home: bool = True,
) -> Settings:
    """Read config.yaml and the environment into one validated ``Settings``.

    Raises ``ConfigError`` with one line per problem, each naming the key,
    where it came from and the expected type; secret values are never echoed.
    """
    env = dict(os.environ if environ is None else environ)
    home = home if home is not None else resolve_home(env)
    if create_home:
        ensure_home(home)
    file_tree = _read_config_file(home / CONFIG_FILE_NAME)
    secrets_env = with_secret_files(_read_secrets_file(home / SECRETS_FILE_NAME))
    env_tree, origins = _environ_to_tree({**secrets_env, **with_secret_files(env)})
    merged = deep_merge(file_tree, env_tree)
    merged["home"] = home
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, origins)) from None
    bind_fallback_keys(settings.llm, {**secrets_env, **with_secret_files(env)})
    for path in secret_paths():
        value = get_path(settings.model_dump(), path)
        if isinstance(value, SecretStr):
            register_secret(value.get_secret_value())
    return settings


def secrets_environment(home: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a provider's secrets come from: ``CHORUS_HOME/.env``, then the
    environment over it (read now, so an edit of ``.env`` reaches the next session)."""
    env = with_secret_files(dict(os.environ if environ is None else environ))
    return {**with_secret_files(_read_secrets_file(home / SECRETS_FILE_NAME)), **env}


def _exists(path: Path) -> bool:
    """``path.exists()``; a home this uid cannot enter is a ``ConfigError`` naming the fix."""
    try:
        return path.exists()
    except PermissionError:
        raise ConfigError(unwritable_home(path.parent)) from None


def with_secret_files(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with each secret's ``<NAME>_FILE`` read into ``<NAME>`` (``_secret_files``)."""
    return expand_secret_files(environ, secret_env_names())


def secret_env_names() -> frozenset[str]:
    """The variables that set a secret setting: the conventional ones and ``CHORUS_*``."""
    paths = set(secret_paths())
    known = {name for name, path in WELL_KNOWN_ENV.items() if path in paths}
    prefixed = {ENV_PREFIX + "__".join(path).upper() for path in paths}
    return frozenset(known | prefixed)


def _read_config_file(path: Path) -> dict[str, Any]:
    if not _exists(path):
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}: {problem}{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    if not _readable_by_others(path):
        return data
    present = [p for p in secret_paths() if get_path(data, p) not in (None, "")]
    present += _provider_secrets_present(data, path.parent)
    if present:
        names = ", ".join(".".join(p) for p in present)
        raise ConfigError(
            f"{path} holds secrets ({names}) but is readable by other users; "
            f"run: chmod 600 {path}  (or move them to environment variables)"
        )
    return data


_SECRET_WORDS = ("key", "secret", "token", "password", "passwd", "credential")


def _provider_secrets_present(data: Mapping[str, Any], home: Path) -> list[tuple[str, ...]]:
    """Paths of provider secrets set in ``memory.providers.<name>``: the fields the
    provider's schema marks secret (by their name when the provider cannot be loaded)."""
    memory = data.get("memory")
    providers = memory.get("providers") if isinstance(memory, Mapping) else None
    if not isinstance(providers, Mapping):
        return []
    present: list[tuple[str, ...]] = []
    for name, section in providers.items():
        if not isinstance(section, Mapping):
            continue
        secret = _provider_secret_keys(str(name), home)
        for key, value in section.items():
            looks_secret = any(word in str(key).lower() for word in _SECRET_WORDS)
            if value not in (None, "") and (key in secret if secret is not None else looks_secret):
                present.append(("memory", "providers", str(name), str(key)))
    return present


def _provider_secret_keys(name: str, home: Path) -> set[str] | None:
    """The keys the provider's schema marks secret; None when it cannot be loaded."""
    try:
        fields = config_fields(load_memory_provider(name, home))
    except PluginError as exc:
        logger.debug("memory provider %s not loaded for the secrets check (%s)", name, exc)
        return None
    return {field["key"] for field in fields if field.get("secret")}


def _read_secrets_file(path: Path) -> dict[str, str]:
    if not _exists(path):
        return {}
    if _readable_by_others(path):
        raise ConfigError(f"{path} is readable by other users; run: chmod 600 {path}")
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def _readable_by_others(path: Path) -> bool:
    return bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))


def _environ_to_tree(
    environ: Mapping[str, str],
) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """Turn variables into a nested dict; also return which variable set each key."""
    tree: dict[str, Any] = {}
    origins: dict[tuple[str, ...], str] = {}
    for name, known in WELL_KNOWN_ENV.items():
        value = environ.get(name)
        if value:
            set_path(tree, known, value)
            origins[known] = name
    for name, value in sorted(environ.items()):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in NON_SETTING_ENV:
            continue
        path = tuple(part for part in upper[len(ENV_PREFIX) :].lower().split("__"))
        if not all(path):
            raise ConfigError(f"{name}: malformed setting name; use CHORUS_<SECTION>__<KEY>")
        set_path(tree, path, _coerce_env_value(path, value))
        origins[path] = name
    return tree, origins


def _coerce_env_value(path: tuple[str, ...], value: str) -> Any:
    """Lists may be given as JSON or comma-separated; YAML-style nulls become None."""
    annotation = _annotation_at(path)
    if annotation is not None and get_origin(annotation) is list:
        stripped = value.strip()
        if stripped.startswith("["):
            parsed = yaml.safe_load(stripped)
            if isinstance(parsed, list):
                return parsed
        return [item.strip() for item in stripped.split(",") if item.strip()]
    if value.strip().lower() in {"", "null", "none", "~"} and _allows_none(annotation):
        return None
    return value


def _annotation_at(path: tuple[str, ...]) -> Any:
    model: type[BaseModel] = Settings
    annotation: Any = None
    for part in path:
        field = model.model_fields.get(part)
        if field is None:
            return None
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return annotation


def _allows_none(annotation: Any) -> bool:
    return annotation is not None and type(None) in get_args(annotation)


def secret_paths(
    model: type[BaseModel] = Settings, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    """Dotted paths of every SecretStr setting, e.g. ``("llm", "api_key")``."""
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from secret_paths(annotation, (*prefix, name))
        elif annotation is SecretStr or SecretStr in get_args(annotation):
            yield (*prefix, name)


def _format_validation_error(exc: ValidationError, origins: dict[tuple[str, ...], str]) -> str:
    secrets = set(secret_paths())
    lines = []
    for error in exc.errors():
        path = tuple(str(part) for part in error["loc"])
        key = ".".join(path)
        origin = _origin_of(path, origins)
        if error["type"] == "extra_forbidden":
            lines.append(f"{key} ({origin}): unknown setting")
            continue
        detail = error["msg"]
        if path not in secrets and "input" in error and not isinstance(error["input"], dict):
            detail += f", got {error['input']!r}"
        lines.append(f"{key} ({origin}): {detail}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _origin_of(path: tuple[str, ...], origins: dict[tuple[str, ...], str]) -> str:
    if path in origins:
        return origins[path]
    for candidate, name in origins.items():
        if candidate[: len(path)] == path:
            return name
    return CONFIG_FILE_NAME

"""Discovery and loading of external memory providers.

Providers are packages in one of two places:

* bundled: ``plugins/memory/<name>/__init__.py``, shipped with chorus;
* user: ``<CHORUS_HOME>/plugins/<name>/__init__.py``, imported under the
  separate namespace ``chorus_user_memory.<name>``. A user directory counts as
  a memory provider only if the first 8 KiB of its ``__init__.py`` mention
  ``register_memory_provider`` or ``MemoryProvider`` (a text scan, no import),
  so other kinds of plugin can live beside them.

A bundled provider wins over a user provider of the same name. An optional
``plugin.yaml`` beside ``__init__.py`` gives the ``description`` shown in listings.

Nothing is imported until it is needed: listing with ``check_available=False``
reads only directories, the text scan and ``plugin.yaml``. Asking whether a
provider is available means importing it and calling its ``is_available()``,
so :func:`discover_memory_providers` with ``check_available=True`` (the
default) loads every provider it lists; a provider that fails to load is listed
as unavailable with the reason in ``error``, never raised.

A provider package either defines ``register(ctx)`` and calls
``ctx.register_memory_provider(provider)`` in it, or defines a concrete
:class:`~memory.providers.MemoryProvider` subclass with a no-argument constructor.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from memory.providers import MemoryProvider
from plugins.errors import PluginError, PluginNotFoundError
from plugins.memory._config import coerce, config_fields, resolve_config
from plugins.memory._loader import ProviderCollector, build_provider, import_provider_module
from plugins.memory._local_state import local_state_refusal as _local_state_refusal

logger = logging.getLogger(__name__)

__all__ = [
    "USER_NAMESPACE",
    "ProviderCollector",
    "ProviderInfo",
    "coerce",
    "config_fields",
    "discover_memory_providers",
    "load_memory_provider",
    "local_state_refusal",
    "provider_cli",
    "resolve_config",
    "user_plugins_dir",
]

USER_NAMESPACE = "chorus_user_memory"
"""Package under which user providers are imported: ``chorus_user_memory.<name>``."""

SCAN_BYTES = 8192
"""How much of a user plugin's ``__init__.py`` the marker scan reads."""

_MARKERS = ("register_memory_provider", "MemoryProvider")

Source = Literal["bundled", "user"]


@dataclass(frozen=True)
class ProviderInfo:
    """One provider as listed by :func:`discover_memory_providers`."""

    name: str
    description: str
    source: Source
    path: Path
    available: bool | None
    """``is_available()``; None when not checked; False when it failed to load."""
    active: bool
    """Whether this is the provider named by ``memory.provider``."""
    error: str | None
    """Why the provider could not be loaded or asked, if it could not."""


@dataclass(frozen=True)
class _Layout:
    """Where bundled providers live and the package names they are imported under."""

    bundled_dir: Path
    bundled_namespace: str
    user_namespace: str = USER_NAMESPACE


_DEFAULT_LAYOUT = _Layout(Path(__file__).resolve().parent, __name__)


@dataclass(frozen=True)
class _Candidate:
    name: str
    source: Source
    path: Path
    namespace: str


def user_plugins_dir(chorus_home: Path) -> Path:
    """Where user plugins live: ``<chorus_home>/plugins``."""
    return chorus_home / "plugins"


def _package_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [
        child
        for child in sorted(root.iterdir())
        if child.is_dir()
        and not child.name.startswith(("_", "."))
        and "." not in child.name
        and (child / "__init__.py").is_file()
    ]


def _mentions_provider(directory: Path) -> bool:
    """The no-import marker scan of a user plugin's ``__init__.py``."""
    try:
        with open(directory / "__init__.py", "rb") as handle:
            head = handle.read(SCAN_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return any(marker in head for marker in _MARKERS)


def _candidates(chorus_home: Path, layout: _Layout) -> list[_Candidate]:
    """Bundled providers, then user providers whose names are not taken, each sorted."""
    found = [
        _Candidate(d.name, "bundled", d, layout.bundled_namespace)
        for d in _package_dirs(layout.bundled_dir)
    ]
    taken = {c.name for c in found}
    for directory in _package_dirs(user_plugins_dir(chorus_home)):
        if not _mentions_provider(directory):
            continue
        if directory.name in taken:
            logger.info(
                "user memory provider %r at %s is shadowed by the bundled one",
                directory.name,
                directory,
            )
            continue
        found.append(_Candidate(directory.name, "user", directory, layout.user_namespace))
    return found


def _description(directory: Path) -> str:
    """``description`` from ``plugin.yaml``; ``""`` when absent or unreadable."""
    path = directory / "plugin.yaml"
    if not path.is_file():
        return ""
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        logger.warning("cannot read %s: %s", path, type(exc).__name__)
        return ""
    description = data.get("description") if isinstance(data, dict) else None
    return str(description).strip() if description is not None else ""


def _build(candidate: _Candidate) -> MemoryProvider:
    module = import_provider_module(candidate.name, candidate.path, candidate.namespace)
    return build_provider(candidate.name, module)


def _availability(candidate: _Candidate) -> tuple[bool, str | None]:
    try:
        provider = _build(candidate)
    except PluginError as exc:
        return False, str(exc)
    try:
        return bool(provider.is_available()), None
    except Exception as exc:
        return False, (
            f"memory provider {candidate.name!r} is_available() failed: {type(exc).__name__}: {exc}"
        )


def _discover(
    chorus_home: Path, active: str | None, *, check_available: bool, layout: _Layout
) -> list[ProviderInfo]:
    infos: list[ProviderInfo] = []
    for candidate in _candidates(chorus_home, layout):
        available: bool | None = None
        error: str | None = None
        if check_available:
            available, error = _availability(candidate)
            if error:
                logger.warning("%s", error)
        infos.append(
            ProviderInfo(
                name=candidate.name,
                description=_description(candidate.path),
                source=candidate.source,
                path=candidate.path,
                available=available,
                active=candidate.name == active,
                error=error,
            )
        )
    return infos


def discover_memory_providers(
    chorus_home: Path, active: str | None = None, *, check_available: bool = True
) -> list[ProviderInfo]:
    """List bundled and user memory providers, bundled first, each group by name.

    ``active`` is the configured ``memory.provider`` and only sets the
    ``active`` flag. With ``check_available=True`` every listed provider is
    imported and built to ask ``is_available()`` (no network, by contract);
    a load failure shows as ``available=False`` with ``error`` set. With
    ``check_available=False`` no provider code runs and ``available`` is None.
    """
    return _discover(chorus_home, active, check_available=check_available, layout=_DEFAULT_LAYOUT)


def _load(name: str, chorus_home: Path, *, layout: _Layout) -> MemoryProvider:
    candidates = _candidates(chorus_home, layout)
    candidate = next((c for c in candidates if c.name == name), None)
    if candidate is None:
        names = ", ".join(c.name for c in candidates) or "none"
        raise PluginNotFoundError(f"memory provider {name!r} not found; available: {names}")
    return _build(candidate)


def provider_cli(name: str, chorus_home: Path) -> Any | None:
    """The provider's own command group (its package's ``cli``, a ``typer.Typer``), if any.

    ``chorus`` shows it as ``chorus memory <name> …`` for the active provider only.
    """
    candidate = next((c for c in _candidates(chorus_home, _DEFAULT_LAYOUT) if c.name == name), None)
    if candidate is None:
        return None
    module = import_provider_module(candidate.name, candidate.path, candidate.namespace)
    group = getattr(module, "cli", None)
    return group if group is not None and hasattr(group, "registered_commands") else None


def load_memory_provider(name: str, chorus_home: Path) -> MemoryProvider:
    """A new, uninitialised instance of the provider ``name``.

    The module is imported once (and again only if its file changed place);
    each call builds a fresh provider object from it.

    Raises:
        PluginNotFoundError: no bundled or user provider is called ``name``.
        PluginLoadError: it failed to import, registered no provider, or its
            constructor raised.
    """
    return _load(name, chorus_home, layout=_DEFAULT_LAYOUT)


def local_state_refusal(
    name: str | None, chorus_home: Path, *, shared_database: bool, local_state: str
) -> str | None:
    """Why provider ``name`` may not keep its state in ``chorus_home``, or None when it may.

    See :mod:`plugins.memory._local_state`.
    """
    return _local_state_refusal(
        name,
        chorus_home,
        load_memory_provider,
        shared_database=shared_database,
        local_state=local_state,
    )

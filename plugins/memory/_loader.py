"""Importing one provider package from its directory and building its provider.

A package is imported from ``<dir>/__init__.py`` under ``<namespace>.<name>``
with its directory as the package path, so relative imports inside it work
and it never lands in another package's namespace. An imported module is
reused while it still comes from the same file; the provider object is built
afresh on every load, either by the module's ``register(ctx)`` or, without
one, by instantiating the first concrete ``MemoryProvider`` subclass it defines.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.providers import MemoryProvider
from plugins.errors import PluginLoadError

logger = logging.getLogger(__name__)

_import_lock = threading.RLock()


class ProviderCollector:
    """The ``ctx`` handed to a plugin's ``register(ctx)``; keeps only memory providers.

    Every other ``register_*`` method a general plugin might call is accepted
    and ignored, so one plugin package can serve several kinds of host.
    """

    def __init__(self) -> None:
        self.providers: list[MemoryProvider] = []

    def register_memory_provider(self, provider: MemoryProvider) -> None:
        """Record ``provider``; the loader uses the first one registered."""
        self.providers.append(provider)

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("register_"):
            return _ignore
        raise AttributeError(name)


def _ignore(*_args: Any, **_kwargs: Any) -> None:
    return None


def _ensure_namespace(namespace: str) -> None:
    """Make sure the (synthetic) parent package of user plugins exists in ``sys.modules``."""
    if namespace not in sys.modules and "." not in namespace:
        parent = types.ModuleType(namespace, "Memory provider packages loaded from CHORUS_HOME.")
        parent.__path__ = []
        sys.modules[namespace] = parent


def _forget(fullname: str) -> None:
    for key in [k for k in sys.modules if k == fullname or k.startswith(fullname + ".")]:
        del sys.modules[key]


def import_provider_module(name: str, directory: Path, namespace: str) -> types.ModuleType:
    """Import the package in ``directory`` as ``<namespace>.<name>`` (reused if current)."""
    fullname = f"{namespace}.{name}"
    init = directory / "__init__.py"
    with _import_lock:
        existing = sys.modules.get(fullname)
        if existing is not None and getattr(existing, "__file__", None) == str(init):
            return existing
        _forget(fullname)
        _ensure_namespace(namespace)
        spec = importlib.util.spec_from_file_location(
            fullname, init, submodule_search_locations=[str(directory)]
        )
        if spec is None or spec.loader is None:
            raise PluginLoadError(f"memory provider {name!r} cannot be imported from {directory}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[fullname] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            _forget(fullname)
            raise PluginLoadError(
                f"memory provider {name!r} failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        logger.debug("imported memory provider module %s from %s", fullname, directory)
        return module


def build_provider(name: str, module: types.ModuleType) -> MemoryProvider:
    """A new provider from ``module``: via ``register(ctx)``, else its provider class."""
    register = getattr(module, "register", None)
    try:
        if callable(register):
            return _from_register(name, register)
        return _from_class(name, module)
    except PluginLoadError:
        raise
    except Exception as exc:
        raise PluginLoadError(
            f"memory provider {name!r} failed to start: {type(exc).__name__}: {exc}"
        ) from exc


def _from_register(name: str, register: Callable[[ProviderCollector], object]) -> MemoryProvider:
    collector = ProviderCollector()
    register(collector)
    providers = [p for p in collector.providers if isinstance(p, MemoryProvider)]
    if len(providers) != len(collector.providers):
        logger.warning("memory provider %r registered an object that is not a MemoryProvider", name)
    if not providers:
        raise PluginLoadError(f"memory provider {name!r} registered no provider")
    if len(providers) > 1:
        logger.warning(
            "memory provider %r registered %d providers; using the first", name, len(providers)
        )
    return providers[0]


def _from_class(name: str, module: types.ModuleType) -> MemoryProvider:
    prefix = module.__name__
    for value in list(vars(module).values()):
        if (
            isinstance(value, type)
            and issubclass(value, MemoryProvider)
            and not inspect.isabstract(value)
            and (value.__module__ == prefix or value.__module__.startswith(prefix + "."))
        ):
            return value()
    raise PluginLoadError(
        f"memory provider {name!r} registered no provider "
        "(no register(ctx) and no MemoryProvider subclass)"
    )

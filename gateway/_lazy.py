"""Names of a package imported on first use (a module-level ``__getattr__``), so that a
command needing one part of a package does not load the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, home: Mapping[str, tuple[str, str]], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``home`` (module, attribute)
    imported when first asked for and kept in ``namespace`` (its ``globals()``)."""

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = home[name]
        value = getattr(import_module(module), attribute)
        namespace[name] = value
        return value

    return __getattr__

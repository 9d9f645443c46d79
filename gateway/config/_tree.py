"""Nested settings trees (config.yaml, the environment) read and combined by path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["deep_merge", "get_path", "set_path"]


def set_path(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[path[-1]] = value


def get_path(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged

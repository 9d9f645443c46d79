"""Architecture rules of DESIGN.md, enforced on every module of the product."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "agent", "memory", "plugins")
MAX_LINES = 600

# top-level import name -> path prefixes (relative, posix) allowed to import it
RESTRICTED: dict[str, tuple[str, ...]] = {
    "telegram": ("gateway/adapters/telegram_",),
    "discord": ("gateway/adapters/discord_",),
    "slack_bolt": ("gateway/adapters/slack_",),
    "slack_sdk": ("gateway/adapters/slack_",),
    "openai": ("agent/llm.py",),
    "redis": ("memory/jobs/_rq.py", "gateway/worker.py"),
    "rq": ("memory/jobs/_rq.py", "gateway/worker.py"),
}

# package -> packages it must never import
FORBIDDEN_LAYERS: dict[str, tuple[str, ...]] = {
    "memory": ("agent", "gateway", "plugins"),
    "agent": ("gateway",),
    "plugins": ("gateway", "agent"),
}


def product_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def violations(rel: str, source: str) -> list[str]:
    found = []
    roots = imported_roots(source)
    package = rel.split("/")[0]
    for forbidden in FORBIDDEN_LAYERS.get(package, ()):
        if forbidden in roots:
            found.append(f"{rel} imports {forbidden} (layer {package} must not)")
    for name, allowed in RESTRICTED.items():
        if name in roots and not rel.startswith(allowed):
            found.append(f"{rel} imports {name} (only {', '.join(allowed)} may)")
    return found


def test_there_are_modules_to_check() -> None:
    assert len(product_modules()) >= 5


@pytest.mark.parametrize("path", product_modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_import_direction(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    assert violations(rel, path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", product_modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_module_size(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it"


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        ("memory/store.py", "from agent import llm", "imports agent"),
        ("memory/store.py", "import gateway.config", "imports gateway"),
        ("agent/agent.py", "from gateway.events import X", "imports gateway"),
        ("agent/agent.py", "import openai", "imports openai"),
        ("gateway/runner.py", "from telegram.ext import Application", "imports telegram"),
        ("gateway/adapters/slack_adapter.py", "import redis", "imports redis"),
        ("plugins/memory/x/__init__.py", "from agent.agent import Agent", "imports agent"),
    ],
)
def test_checker_catches_violations(rel: str, source: str, expected: str) -> None:
    assert any(expected in v for v in violations(rel, source))


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("agent/llm.py", "import openai"),
        ("memory/jobs/_rq.py", "from rq import Queue\nimport redis"),
        ("gateway/adapters/telegram_adapter.py", "from telegram.ext import Application"),
        ("gateway/cli.py", "from agent.agent import Agent\nfrom memory.store import MemoryStore"),
        ("memory/store.py", "from .paths import safe_component"),
    ],
)
def test_checker_allows_designated_modules(rel: str, source: str) -> None:
    assert violations(rel, source) == []

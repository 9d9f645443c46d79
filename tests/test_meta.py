"""Architecture rules of DESIGN.md, enforced on every module of the product.

- the layers import downwards only (``memory`` ← ``agent`` ← ``gateway``; plugins
  see only ``memory``), and inside ``gateway`` each subpackage only the ones
  below it (``GATEWAY_LAYERS``);
- each platform SDK only inside its platform's package, ``openai`` only in the
  LLM client, ``redis``/``rq`` only in the rq queue and the worker;
- a private module (``_name.py``) only from inside its own package;
- no import circles between modules, counting imports under ``TYPE_CHECKING``
  and inside functions;
- no module over ``MAX_LINES`` lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from gateway.adapters import PLATFORMS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "agent", "memory", "plugins")
MAX_LINES = 600

# top-level import name -> path prefixes (relative, posix) allowed to import it
RESTRICTED: dict[str, tuple[str, ...]] = {
    **{sdk: (f"gateway/adapters/{spec.name}/",) for spec in PLATFORMS for sdk in spec.sdk},
    "openai": ("agent/llm.py",),
    "redis": ("memory/jobs/_rq", "gateway/app/_worker.py", "gateway/replicas/"),
    "rq": ("memory/jobs/_rq", "gateway/app/_worker.py"),
    "psycopg": ("memory/database/_postgres",),
    "psycopg_pool": ("memory/database/_postgres",),
}

# package -> packages it must never import
FORBIDDEN_LAYERS: dict[str, tuple[str, ...]] = {
    "memory": ("agent", "gateway", "plugins"),
    "agent": ("gateway",),
    "plugins": ("gateway", "agent"),
}

# inside gateway: a unit may import units of a lower rank only (and itself)
GATEWAY_LAYERS: dict[str, int] = {
    "gateway": 0,
    "gateway.errors": 0,
    "gateway.events": 0,
    "gateway.clock": 0,
    "gateway.logs": 0,
    "gateway._texts": 0,
    "gateway.adapters": 1,
    "gateway.replicas": 1,
    "gateway.config": 2,
    "gateway.access": 3,
    "gateway.ops": 2,
    "gateway.sessions": 3,
    "gateway.commands": 4,
    "gateway.runner": 5,
    "gateway.app": 6,
    "gateway.cli": 7,
}


def product_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def known_modules() -> frozenset[str]:
    return frozenset(module_name(p) for p in product_modules())


def imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _nearest_module(name: str, modules: frozenset[str]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_modules(source: str, modules: frozenset[str]) -> set[str]:
    """Product modules a source imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                for a in node.names
            ]
        for target in targets:
            module = _nearest_module(target, modules)
            if module is not None:
                found.add(module)
    return found


def gateway_unit(module: str) -> str:
    """The entry of ``GATEWAY_LAYERS`` a gateway module belongs to."""
    parts = module.split(".")
    for length in (2, 1):
        unit = ".".join(parts[:length])
        if unit in GATEWAY_LAYERS:
            return unit
    raise KeyError(f"{module} belongs to no entry of GATEWAY_LAYERS; add it")


def private_owner(module: str) -> str | None:
    """The package whose private module ``module`` is (or is inside), if any."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:index])
    return None


def violations(rel: str, source: str, modules: frozenset[str] | None = None) -> list[str]:
    known = known_modules() if modules is None else modules
    found = []
    roots = imported_roots(source)
    package = rel.split("/")[0]
    me = module_name(ROOT / rel)
    for forbidden in FORBIDDEN_LAYERS.get(package, ()):
        if forbidden in roots:
            found.append(f"{rel} imports {forbidden} (layer {package} must not)")
    for name, allowed in RESTRICTED.items():
        if name in roots and not rel.startswith(allowed):
            found.append(f"{rel} imports {name} (only {', '.join(allowed)} may)")
    for target in imported_modules(source, known | {me}):
        owner = private_owner(target)
        if owner is not None and not (me == owner or me.startswith(owner + ".")):
            found.append(f"{rel} imports {target}, private to {owner}")
        if package == "gateway" and target.startswith("gateway"):
            mine, theirs = gateway_unit(me), gateway_unit(target)
            if mine != theirs and GATEWAY_LAYERS[theirs] >= GATEWAY_LAYERS[mine]:
                found.append(f"{rel} imports {target} ({theirs} is not below {mine})")
    return found


def import_graph() -> dict[str, set[str]]:
    modules = known_modules()
    return {
        module_name(path): imported_modules(path.read_text(encoding="utf-8"), modules)
        - {module_name(path)}
        for path in product_modules()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = iter(range(10**9))

    def visit(node: str) -> Iterator[None]:
        index[node] = low[node] = next(counter)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                yield from visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))
        yield None

    for node in sorted(graph):
        if node not in index:
            for _ in visit(node):
                pass
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


def test_no_import_circles() -> None:
    assert cycles(import_graph()) == []


def test_every_gateway_module_has_a_layer() -> None:
    for module in known_modules():
        if module.startswith("gateway"):
            gateway_unit(module)


def test_cycle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        ("memory/store/_store.py", "from agent import llm", "imports agent"),
        ("memory/store/_store.py", "import gateway.config", "imports gateway"),
        ("agent/agent.py", "from gateway.events import X", "imports gateway"),
        ("agent/agent.py", "import openai", "imports openai"),
        ("gateway/runner.py", "from telegram.ext import Application", "imports telegram"),
        ("gateway/adapters/slack/_adapter.py", "import redis", "imports redis"),
        ("gateway/adapters/slack/_adapter.py", "import discord", "imports discord"),
        ("plugins/memory/x/__init__.py", "from agent.agent import Agent", "imports agent"),
        ("gateway/runner.py", "from gateway.adapters.telegram._bot import x", "private to"),
        ("gateway/adapters/_base.py", "from gateway.runner import GatewayRunner", "not below"),
        ("gateway/sessions/_live.py", "from gateway.commands import Command", "not below"),
        ("gateway/access/_auth.py", "from gateway.sessions import LiveSession", "not below"),
        (
            "gateway/commands/_registry.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gateway.runner import R",
            "not below",
        ),
    ],
)
def test_checker_catches_violations(rel: str, source: str, expected: str) -> None:
    assert any(expected in v for v in violations(rel, source))


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("agent/llm.py", "import openai"),
        ("memory/jobs/_rq.py", "from rq import Queue\nimport redis"),
        ("gateway/adapters/telegram/_adapter.py", "from telegram.ext import Application"),
        ("gateway/adapters/telegram/_adapter.py", "from gateway.adapters._base import B"),
        ("gateway/cli/_app.py", "from agent.agent import Agent\nfrom memory.store import X"),
        ("gateway/runner.py", "from gateway.sessions import SessionManager"),
    ],
)
def test_checker_allows_designated_modules(rel: str, source: str) -> None:
    assert violations(rel, source) == []


# ---------------------------------------------------------------- wiring at construction

WIRING = ROOT / "gateway" / "app"
READOUTS = frozenset({"set_sources", "set_replica"})
"""Metrics read-outs: what a gauge reads, not who handles what."""


def late_wiring(source: str) -> list[str]:
    """Where ``source`` decides who handles what after construction: a setter or binder
    called on another object, an attribute of another object assigned, or a handler
    appended to another object's list."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and not _rooted_at_self(target.value):
                    found.append(f"line {node.lineno}: assigns {ast.unparse(target)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, owner = node.func.attr, node.func.value
            setter = name.startswith("set_") or name in {"bind", "attach", "add_adapter"}
            setter = setter and name not in READOUTS
            appended = name in {"append", "extend"} and isinstance(owner, ast.Attribute)
            if (setter or appended) and not _rooted_at_self(owner):
                found.append(f"line {node.lineno}: calls {ast.unparse(node.func)}")
    return found


def _rooted_at_self(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in {"self", "cls"}


@pytest.mark.parametrize("path", sorted(WIRING.glob("*.py")), ids=lambda p: p.name)
def test_wiring_happens_at_construction(path: Path) -> None:
    """gateway/app builds every part with what it works with; nothing is bound later."""
    assert late_wiring(path.read_text()) == []


@pytest.mark.parametrize(
    "source",
    [
        "runner.rate_check = check",
        "sessions.bind(run, notice)",
        "adapter.set_handler(router.route)",
        "factory.llm.observers.append(observe)",
        "context.provider.health = lambda: context.health",
    ],
)
def test_late_wiring_is_found(source: str) -> None:
    assert late_wiring(source)


def test_construction_and_own_state_are_not_late_wiring() -> None:
    source = "self.closing = True\nmetrics.set_sources(x=f)\nrunner = Runner(rate=check)\n"
    assert late_wiring(source) == []

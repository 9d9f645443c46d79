"""Architecture rules of DESIGN.md, enforced on every module of the product.

- the layers import downwards only (``memory`` ← ``agent`` ← ``gateway``; plugins
  see only ``memory``), and inside ``gateway`` each subpackage only the ones
  below it (``GATEWAY_LAYERS``);
- each platform SDK only inside its platform's package, ``openai`` only in the
  LLM client, ``redis``/``rq`` only in the rq queue and the worker;
- a private module (``_name.py``) only from inside its own package;
- no import circles between modules, counting imports under ``TYPE_CHECKING``
  and inside functions;
- no module over ``MAX_LINES`` lines;
- each package's errors module draws its complete exception tree in its docstring.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
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
    "gateway.media": 1,
    "gateway.replicas": 1,
    "gateway.config": 2,
    "gateway.access": 3,
    "gateway.budgets": 3,
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


def readme_setting_rows() -> list[tuple[list[str], str | None]]:
    """Rows of README.md's settings tables: the keys of the first column (``section.*``
    and ``memory.providers.<name>`` as written) and the "takes effect" column if the table has one.
    """
    rows: list[tuple[list[str], str | None]] = []
    effect_column: int | None = None
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            effect_column = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == "key":
            effect_column = cells.index("takes effect") if "takes effect" in cells else None
            continue
        keys = re.findall(r"`([a-z_]+(?:\.[a-z_*<>]+)+)`", cells[0])
        if keys:
            effect = cells[effect_column] if effect_column is not None else None
            rows.append((keys, effect))
    return rows


def test_every_setting_has_a_readme_row_that_says_when_it_takes_effect() -> None:
    from gateway.config import SETTING_EFFECTS

    declared = {".".join(path): when for path, when in SETTING_EFFECTS.items()}
    listed: set[str] = set()
    said: dict[str, str] = {}
    for keys, effect in readme_setting_rows():
        for written in keys:
            key = written.removesuffix(".<name>")
            covered = (
                [k for k in declared if k.startswith(key[:-1])] if key.endswith(".*") else [key]
            )
            assert all(k in declared for k in covered), f"README names unknown setting {written}"
            if not key.endswith(".*"):
                listed.add(key)
            if effect is not None:
                said.update(dict.fromkeys(covered, effect))
    assert sorted(set(declared) - listed) == [], "settings without a README row"
    wrong = {
        key: (said.get(key), when)
        for key, when in declared.items()
        if said.get(key) is None or re.fullmatch(rf"{when}( \(.*\))?", said[key]) is None
    }
    assert wrong == {}, "README's 'takes effect' column (said, declared) differs"


# --- exception trees ------------------------------------------------------------------

ERROR_MODULES = {
    "gateway.errors": "gateway",
    "gateway.replicas._errors": "gateway.replicas",
    "agent.errors": "agent",
    "memory.errors": "memory",
    "plugins.errors": "plugins",
}
"""Each errors module -> the package whose exceptions its docstring's tree must show."""

_BRANCH = re.compile(r"^((?:│   |    )*)(?:├── |└── )(\S+)")


def drawn_tree(doc: str) -> list[tuple[str, str | None]]:
    """(name, parent name) of every entry of the docstring's ``Exception tree::`` block."""
    lines = doc.splitlines()
    named = next(i for i, line in enumerate(lines) if "Exception tree" in line)
    start = next(i for i in range(named, len(lines)) if lines[i].rstrip().endswith("::"))
    block = lines[start + 1 :]
    while block and not block[0].strip():
        block.pop(0)
    indent = len(block[0]) - len(block[0].lstrip())
    entries: list[tuple[str, str | None]] = []
    stack: list[str] = []
    for line in block:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break  # the text after the tree
        text = line[indent:]
        if not text.strip():
            continue
        if not entries:
            stack = [text.split()[0]]
            entries.append((stack[0], None))
            continue
        match = _BRANCH.match(text)
        if match is None:
            continue  # a description running on
        depth = len(match.group(1)) // 4 + 1
        stack = [*stack[:depth], match.group(2)]
        entries.append((match.group(2), stack[depth - 1]))
    return entries


def _names(entry: str, cls: type) -> bool:
    """Whether ``entry`` (``Name`` or ``provider.Name``) is ``cls``."""
    *where, name = entry.split(".")
    return name == cls.__name__ and all(part in cls.__module__.split(".") for part in where)


def _exceptions_of(package: str) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    modules = [importlib.import_module(package)]
    root = modules[0]
    if hasattr(root, "__path__"):
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            modules.append(importlib.import_module(info.name))
    for module in modules:
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found.add(value)
    return found


@pytest.mark.parametrize("module_name", sorted(ERROR_MODULES))
def test_every_exception_is_drawn_in_its_errors_module_under_its_parent(module_name: str) -> None:
    module = importlib.import_module(module_name)
    tree = drawn_tree(module.__doc__ or "")
    assert tree, f"{module_name} draws no exception tree"
    root = getattr(module, tree[0][0])
    own = {
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module_name
    }
    family = {cls for cls in _exceptions_of(ERROR_MODULES[module_name]) if issubclass(cls, root)}
    known = {root} | own | family
    for cls in sorted(own | family, key=lambda c: (c.__module__, c.__name__)):
        drawn = [(name, parent) for name, parent in tree if _names(name, cls)]
        where = f"{cls.__module__}.{cls.__name__}"
        assert len(drawn) == 1, f"{module_name}: {where} is drawn {len(drawn)} times"
        if cls is root:
            assert drawn[0][1] is None, f"{module_name}: the root {where} is drawn under another"
            continue
        in_family = [base for base in cls.__bases__ if issubclass(base, root)]
        real = in_family[0] if in_family else cls.__bases__[0]
        assert drawn[0][1] is not None and _names(drawn[0][1], real), (
            f"{module_name}: {where} is drawn under {drawn[0][1]}, not {real.__name__}"
        )
    for name, _ in tree:
        assert any(_names(name, cls) for cls in known), f"{module_name} draws no class {name}"


def test_the_tree_reader_sees_depth_and_running_descriptions() -> None:
    doc = """Errors.

    Exception tree::

        Root                root
        ├── A               one
        │   │               running on
        │   ├── B           two
        │   │   └── C       three
        │   └── D           four
        └── p.E             five

    After the tree.
    """
    assert drawn_tree(doc) == [
        ("Root", None),
        ("A", "Root"),
        ("B", "A"),
        ("C", "B"),
        ("D", "A"),
        ("p.E", "Root"),
    ]


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


# ---------------------------------------------------------------- public surfaces


def package_inits() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py"))


@pytest.mark.parametrize("path", package_inits(), ids=lambda p: module_name(p))
def test_every_package_names_its_surface(path: Path) -> None:
    """Each package declares ``__all__``, and every name in it is there."""
    name = module_name(path)
    package = importlib.import_module(name)
    surface = getattr(package, "__all__", None)
    assert isinstance(surface, list | tuple), f"{name} declares no __all__"
    assert [n for n in surface if not hasattr(package, n)] == []
    assert len(set(surface)) == len(surface), f"{name} lists a name twice"

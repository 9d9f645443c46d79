"""Discovery and loading of memory provider plugins from real directories."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import plugins.memory
from memory.providers import MemoryProvider
from plugins.errors import PluginError, PluginLoadError, PluginNotFoundError
from plugins.memory import (
    USER_NAMESPACE,
    ProviderInfo,
    _discover,
    _Layout,
    _load,
    discover_memory_providers,
    load_memory_provider,
)

TEST_BUNDLED_NAMESPACE = "chorus_test_bundled"

REGISTER_STYLE = '''
"""Echo: recalls a fixed greeting from a sibling module."""
from pathlib import Path

from memory.providers import MemoryProvider

from .helper import GREETING

Path(__file__).with_name("imported.marker").write_text("imported", encoding="utf-8")


class EchoProvider(MemoryProvider):
    @property
    def name(self):
        return "echo"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []

    def prefetch(self, query, *, session_id=""):
        return GREETING


def register(ctx):
    ctx.register_tool("unrelated", {}, lambda args: "")
    ctx.register_memory_provider(EchoProvider())
'''

SUBCLASS_STYLE = """
from memory.providers import BuiltinMemoryProvider  # imported, so not this plugin's class
from memory.providers import MemoryProvider


class ShyProvider(MemoryProvider):
    name = "shy"

    def is_available(self):
        return False

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []
"""

BROKEN = """
from memory.providers import MemoryProvider

raise ImportError("the frobnicate SDK is not installed")
"""

SILENT_REGISTER = """
def register(ctx):
    ctx.register_memory_provider  # looked at, never called
"""

NOT_A_MEMORY_PLUGIN = """
from pathlib import Path

Path(__file__).with_name("imported.marker").write_text("imported", encoding="utf-8")


def register(ctx):
    ctx.register_tool("weather", {}, lambda args: "sunny")
"""


def write_plugin(
    root: Path, name: str, source: str, *, description: str | None = None, **files: str
) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "__init__.py").write_text(textwrap.dedent(source), encoding="utf-8")
    for filename, text in files.items():
        (directory / f"{filename}.py").write_text(text, encoding="utf-8")
    if description is not None:
        (directory / "plugin.yaml").write_text(
            f"name: {name}\ndescription: {description}\nversion: 1\n", encoding="utf-8"
        )
    return directory


@pytest.fixture(autouse=True)
def _forget_loaded_plugins() -> Iterator[None]:
    yield
    for key in list(sys.modules):
        if key.split(".")[0] in (USER_NAMESPACE, TEST_BUNDLED_NAMESPACE):
            del sys.modules[key]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "chorus-home"


@pytest.fixture
def user_dir(home: Path) -> Path:
    return home / "plugins"


@pytest.fixture
def layout(tmp_path: Path) -> _Layout:
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    return _Layout(bundled, TEST_BUNDLED_NAMESPACE)


def write_echo(user_dir: Path) -> Path:
    return write_plugin(
        user_dir,
        "echo",
        REGISTER_STYLE,
        description="Echoes a greeting",
        helper='GREETING = "hello from the helper module"\n',
    )


BUNDLED = [
    d.name
    for d in sorted(Path(plugins.memory.__file__).parent.iterdir())
    if (d / "__init__.py").is_file() and not d.name.startswith("_")
]
"""The providers shipped with chorus, as discovery lists them (by name)."""


def user_providers(home: Path, active: str | None = None, **options: bool) -> list[ProviderInfo]:
    """What discovery lists from the user's plugin directory (bundled ones left out)."""
    found = discover_memory_providers(home, active, **options)
    return [info for info in found if info.source == "user"]


def test_no_plugins_anywhere(home: Path) -> None:
    assert user_providers(home, "echo") == []


def test_bundled_providers_are_listed_first_and_available(home: Path, user_dir: Path) -> None:
    write_echo(user_dir)
    found = discover_memory_providers(home, "holographic")
    assert [(i.name, i.source) for i in found] == [
        *((name, "bundled") for name in BUNDLED),
        ("echo", "user"),
    ]
    holographic = next(i for i in found if i.name == "holographic")
    assert holographic.available is True and holographic.active is True


def test_user_plugin_is_discovered_with_description_and_flags(home: Path, user_dir: Path) -> None:
    echo_dir = write_echo(user_dir)
    write_plugin(user_dir, "shy", SUBCLASS_STYLE)

    echo, shy = user_providers(home, active="echo")

    assert (echo.name, echo.description, echo.source, echo.path) == (
        "echo",
        "Echoes a greeting",
        "user",
        echo_dir,
    )
    assert (echo.available, echo.active, echo.error) == (True, True, None)
    assert (shy.name, shy.description, shy.available, shy.active, shy.error) == (
        "shy",
        "",
        False,
        False,
        None,
    )


def test_register_style_loads_under_its_own_namespace(home: Path, user_dir: Path) -> None:
    write_echo(user_dir)
    provider = load_memory_provider("echo", home)
    assert isinstance(provider, MemoryProvider)
    assert provider.name == "echo"
    assert provider.prefetch("hi") == "hello from the helper module"  # relative import worked
    assert f"{USER_NAMESPACE}.echo" in sys.modules
    assert f"{USER_NAMESPACE}.echo.helper" in sys.modules
    assert not any(key.startswith("plugins.memory.echo") for key in sys.modules)


def test_subclass_style_loads_its_own_class(home: Path, user_dir: Path) -> None:
    write_plugin(user_dir, "shy", SUBCLASS_STYLE)
    provider = load_memory_provider("shy", home)
    assert type(provider).__name__ == "ShyProvider"
    assert provider.is_available() is False


def test_every_load_is_a_new_instance(home: Path, user_dir: Path) -> None:
    write_echo(user_dir)
    write_plugin(user_dir, "shy", SUBCLASS_STYLE)
    for name in ("echo", "shy"):
        first, second = load_memory_provider(name, home), load_memory_provider(name, home)
        assert first is not second
        assert type(first) is type(second)


def test_a_plugin_that_fails_to_import(home: Path, user_dir: Path) -> None:
    write_plugin(user_dir, "broken", BROKEN)
    write_echo(user_dir)

    infos = {info.name: info for info in discover_memory_providers(home)}
    assert infos["broken"].available is False
    assert infos["broken"].error is not None and "ImportError" in infos["broken"].error
    assert infos["echo"].available is True

    with pytest.raises(PluginLoadError, match="failed to import: ImportError: the frobnicate"):
        load_memory_provider("broken", home)
    assert f"{USER_NAMESPACE}.broken" not in sys.modules


def test_a_plugin_that_registers_nothing(home: Path, user_dir: Path) -> None:
    write_plugin(user_dir, "silent", SILENT_REGISTER)
    with pytest.raises(PluginError, match="memory provider 'silent' registered no provider"):
        load_memory_provider("silent", home)
    (info,) = user_providers(home)
    assert info.available is False and "registered no provider" in (info.error or "")


def test_unknown_name_lists_what_exists(home: Path, user_dir: Path) -> None:
    write_echo(user_dir)
    write_plugin(user_dir, "shy", SUBCLASS_STYLE)
    listed = f"'nope' not found; available: {', '.join(BUNDLED)}, echo, shy"
    with pytest.raises(PluginNotFoundError, match=listed):
        load_memory_provider("nope", home)
    with pytest.raises(PluginError, match=rf"available: {', '.join(BUNDLED)}$"):
        load_memory_provider("nope", home / "elsewhere")


def test_directories_without_provider_markers_are_ignored(home: Path, user_dir: Path) -> None:
    weather = write_plugin(user_dir, "weather", NOT_A_MEMORY_PLUGIN)
    (user_dir / "_private").mkdir()
    (user_dir / "_private" / "__init__.py").write_text("# MemoryProvider\n", encoding="utf-8")
    (user_dir / "no_init").mkdir()
    (user_dir / "stray.py").write_text("# MemoryProvider\n", encoding="utf-8")

    assert user_providers(home) == []
    assert not (weather / "imported.marker").exists()
    with pytest.raises(PluginNotFoundError):
        load_memory_provider("weather", home)


def test_listing_without_availability_imports_nothing(home: Path, user_dir: Path) -> None:
    echo_dir = write_echo(user_dir)
    marker = echo_dir / "imported.marker"

    (info,) = user_providers(home, "echo", check_available=False)
    assert (info.name, info.description, info.available, info.active) == (
        "echo",
        "Echoes a greeting",
        None,
        True,
    )
    assert not marker.exists()
    assert f"{USER_NAMESPACE}.echo" not in sys.modules

    (checked,) = user_providers(home, "echo")
    assert checked.available is True
    assert marker.exists()


def test_bundled_provider_wins_a_name_clash(
    home: Path, user_dir: Path, layout: _Layout, tmp_path: Path
) -> None:
    bundled_echo = write_plugin(
        layout.bundled_dir,
        "echo",
        REGISTER_STYLE.replace('return "echo"', 'return "bundled-echo"'),
        description="The bundled echo",
        helper='GREETING = "bundled"\n',
    )
    write_echo(user_dir)
    write_plugin(user_dir, "shy", SUBCLASS_STYLE)

    infos = _discover(home, "echo", check_available=False, layout=layout)
    assert [(i.name, i.source, i.path) for i in infos] == [
        ("echo", "bundled", bundled_echo),
        ("shy", "user", user_dir / "shy"),
    ]
    provider = _load("echo", home, layout=layout)
    assert (provider.name, provider.prefetch("q")) == ("bundled-echo", "bundled")
    assert f"{TEST_BUNDLED_NAMESPACE}.echo" in sys.modules
    assert f"{USER_NAMESPACE}.echo" not in sys.modules


def test_bundled_providers_need_no_marker(home: Path, layout: _Layout) -> None:
    write_plugin(layout.bundled_dir, "plain", "VALUE = 1\n")
    (info,) = _discover(home, None, check_available=False, layout=layout)
    assert (info.name, info.source, info.available) == ("plain", "bundled", None)

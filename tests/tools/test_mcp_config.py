"""``tools.mcp_servers`` is validated like the rest of the configuration; ``chorus doctor``
says how each server is; the names the model sees are valid and distinct."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent.tools.mcp._names import namespaced
from gateway.cli._doctor import run_checks
from gateway.config import load_settings
from gateway.errors import ConfigError
from tests.tools.conftest import pids, stdio_server, write_config

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def config_error(home: Path, servers: dict[str, Any]) -> str:
    write_config(home, servers)
    with pytest.raises(ConfigError) as info:
        load_settings(home, {})
    return str(info.value)


def test_a_server_is_read_with_its_defaults(chorus_home: Path, tmp_path: Path) -> None:
    write_config(chorus_home, {"demo": stdio_server(tmp_path), "web": {"url": "http://h/mcp"}})
    servers = load_settings(chorus_home, {}).tools.mcp_servers
    assert servers["demo"].timeout == 30 and servers["demo"].enabled
    assert servers["web"].url == "http://h/mcp" and servers["web"].headers == {}


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ({}, "set either command (a stdio server) or url (Streamable HTTP)"),
        ({"command": "x", "url": "http://h/"}, "set either command"),
        ({"url": "http://h/", "env": {"A": "b"}}, "args and env are for a stdio server"),
        ({"command": "x", "headers": {"A": "b"}}, "headers are for a Streamable HTTP server"),
        ({"command": "x", "timeout": 0}, "timeout"),
        ({"url": "ftp://h/"}, "url"),
        ({"command": "x", "colour": "red"}, "colour (config.yaml): unknown setting"),
    ],
)
def test_a_bad_server_is_refused_naming_the_key(
    chorus_home: Path, server: dict[str, Any], message: str
) -> None:
    error = config_error(chorus_home, {"demo": server})
    assert "tools.mcp_servers.demo" in error
    assert message in error


def test_a_per_person_secret_must_be_a_secret_name(chorus_home: Path) -> None:
    server = {"url": "http://h/", "headers": {"Authorization": "Bearer {person.secret.gh}"}}
    error = config_error(chorus_home, {"github": server})
    assert "tools.mcp_servers.github" in error
    assert "headers.Authorization: {person.secret.gh} is not a secret name" in error
    env = {"command": "x", "env": {"TOKEN": "{person.secret.TOKEN}", "MODE": "plain"}}
    write_config(chorus_home, {"gh": env})
    [gh] = load_settings(chorus_home, {}).tools.mcp_servers.values()
    assert gh.per_person and gh.secrets_needed() == ["TOKEN"]
    assert gh.for_person({"TOKEN": "tok-of-ann"}).env == {"TOKEN": "tok-of-ann", "MODE": "plain"}
    assert gh.without_person().env == {"MODE": "plain"}


def test_a_server_name_must_fit_a_function_name(chorus_home: Path) -> None:
    error = config_error(chorus_home, {"my server": {"command": "x"}})
    assert "server name 'my server'" in error


def test_names_are_valid_and_distinct() -> None:
    taken: set[str] = set()
    first = namespaced("srv", ["a.b", "a_b", "x" * 80, "x" * 81, "ok"], taken)
    second = namespaced("srv.2", ["ok"], taken)
    names = [*first, *second]
    assert all(VALID_NAME.match(name) for name in names)
    assert len(set(names)) == len(names) == 6
    assert first["srv__a_b"] == "a.b"  # the first keeps the plain name
    assert "srv__ok" in first and "srv_2__ok" in second
    again = namespaced("srv", ["a.b", "a_b", "x" * 80, "x" * 81, "ok"], set())
    assert again == first  # the same names from one listing to the next


def checks(home: Path) -> list[Any]:
    return run_checks({"CHORUS_HOME": str(home)})


def test_doctor_says_how_each_server_is(chorus_home: Path, tmp_path: Path) -> None:
    state = tmp_path / "s"
    servers = {
        "demo": stdio_server(state),
        "broken": {"command": str(tmp_path / "missing")},
        "off": {"command": "x", "enabled": False},
    }
    write_config(chorus_home, servers)
    results = {r.detail.split(":")[0]: r for r in checks(chorus_home) if r.name == "tools"}
    assert results["demo"].ok and results["demo"].detail == "demo: up, 5 tools"
    assert not results["broken"].ok
    assert "broken: DOWN" in results["broken"].detail
    assert "FileNotFoundError" in results["broken"].detail
    assert results["off"].ok and results["off"].detail == "off: disabled"
    [pid] = pids(state)
    assert not Path(f"/proc/{pid}").exists()  # the doctor's own start is stopped again

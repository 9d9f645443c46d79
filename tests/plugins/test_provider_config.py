"""A provider's settings checked against its schema: types, choices, required, secrets."""

from __future__ import annotations

from typing import Any

import pytest

from memory.providers import MemoryProvider
from plugins.errors import PluginConfigError
from plugins.memory import resolve_config

SCHEMA: list[dict[str, Any]] = [
    {"key": "mode", "description": "where", "default": "local", "choices": ["local", "cloud"]},
    {"key": "limit", "description": "how many", "default": 5},
    {"key": "fuzzy", "description": "fuzzy?", "default": True},
    {"key": "host", "description": "server", "env_var": "TESTMEM_HOST"},
    {"key": "api_key", "description": "key", "secret": True, "env_var": "TESTMEM_KEY"},
    {"key": "region", "description": "region", "required": True},
]


class Configured(MemoryProvider):
    def __init__(self, schema: list[dict[str, Any]] = SCHEMA) -> None:
        self.schema = schema

    @property
    def name(self) -> str:
        return "testmem"

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        pass

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def get_config_schema(self) -> list[dict[str, Any]]:
        return self.schema


def test_values_are_typed_defaults_fill_in_and_secrets_come_from_the_environment() -> None:
    section = {"limit": "7", "fuzzy": "no", "region": "eu"}
    env = {"TESTMEM_KEY": "sk-live", "TESTMEM_HOST": "http://mem.local"}
    assert resolve_config(Configured(), section, env) == {
        "mode": "local",
        "limit": 7,
        "fuzzy": False,
        "host": "http://mem.local",
        "api_key": "sk-live",
        "region": "eu",
    }


def test_config_yaml_wins_over_the_environment_for_plain_settings() -> None:
    got = resolve_config(Configured(), {"region": "eu", "host": "http://a"}, {"TESTMEM_HOST": "b"})
    assert got["host"] == "http://a" and "api_key" not in got


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"region": "eu", "api_key": "sk-in-the-file"}, "api_key is a secret"),
        ({"region": "eu", "limit": "many"}, "limit: expected int"),
        ({"region": "eu", "mode": "moon"}, "mode: expected one of local, cloud"),
        ({}, "memory.providers.testmem.region is required"),
        ({"region": "eu", "colour": "red"}, "unknown key(s) colour"),
    ],
)
def test_bad_settings_name_the_key_and_never_echo_a_secret(
    section: dict[str, Any], message: str
) -> None:
    with pytest.raises(PluginConfigError) as caught:
        resolve_config(Configured(), section, {})
    assert message in str(caught.value)
    assert "sk-in-the-file" not in str(caught.value)
    if "secret" in message:
        assert "TESTMEM_KEY" in str(caught.value)


def test_a_provider_without_a_schema_gets_its_section_as_it_is() -> None:
    assert resolve_config(Configured([]), {"anything": 1}, {}) == {"anything": 1}

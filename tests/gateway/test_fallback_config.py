"""``llm.fallbacks`` in config.yaml: each endpoint's key comes from the variable it names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.llm import LLMClient
from gateway.config import load_settings
from gateway.errors import ConfigError


def write_fallbacks(home: Path, *entries: dict[str, object]) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump({"llm": {"fallbacks": list(entries)}}), encoding="utf-8")
    path.chmod(0o600)


GROQ = {"base_url": "https://api.groq.com/openai/v1", "model": "llama-3.3-70b"}


def test_a_fallback_takes_its_key_from_the_named_variable(chorus_home: Path) -> None:
    write_fallbacks(chorus_home, {**GROQ, "api_key_env": "GROQ_API_KEY", "timeout_seconds": 30})
    settings = load_settings(chorus_home, {"GROQ_API_KEY": "gsk-secret"})
    [entry] = settings.llm.fallbacks
    assert entry.api_key is not None and entry.api_key.get_secret_value() == "gsk-secret"
    assert (entry.model, entry.timeout_seconds) == ("llama-3.3-70b", 30)
    assert "gsk-secret" not in repr(settings) and "gsk-secret" not in str(settings.model_dump())


def test_the_key_may_come_from_chorus_home_env_file(chorus_home: Path) -> None:
    write_fallbacks(chorus_home, {**GROQ, "api_key_env": "GROQ_API_KEY"})
    env_file = chorus_home / ".env"
    env_file.write_text("GROQ_API_KEY=gsk-from-file\n", encoding="utf-8")
    env_file.chmod(0o600)
    [entry] = load_settings(chorus_home, {}).llm.fallbacks
    assert entry.api_key is not None and entry.api_key.get_secret_value() == "gsk-from-file"


def test_an_unset_key_variable_is_a_clear_error_naming_it(chorus_home: Path) -> None:
    write_fallbacks(chorus_home, {**GROQ, "api_key_env": "GROQ_API_KEY"})
    with pytest.raises(ConfigError) as info:
        load_settings(chorus_home, {"GROQ_API_KEY": ""})
    message = str(info.value)
    assert "llm.fallbacks.0.api_key_env" in message and "GROQ_API_KEY" in message


def test_a_key_written_in_config_yaml_is_refused(chorus_home: Path) -> None:
    write_fallbacks(chorus_home, {**GROQ, "api_key": "gsk-in-the-file"})
    with pytest.raises(ConfigError) as info:
        load_settings(chorus_home, {})
    assert "llm.fallbacks.0.api_key" in str(info.value) and "unknown setting" in str(info.value)
    assert "gsk-in-the-file" not in str(info.value)


def test_a_local_fallback_needs_no_key(chorus_home: Path) -> None:
    write_fallbacks(chorus_home, {"base_url": "http://127.0.0.1:11434/v1", "model": "qwen3"})
    [entry] = load_settings(chorus_home, {}).llm.fallbacks
    assert entry.api_key is None


async def test_a_primary_timeout_as_long_as_the_turn_is_warned_about(
    chorus_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The turn's deadline would end a hung primary's turn before any fallback is asked."""
    write_fallbacks(chorus_home, {"base_url": "http://127.0.0.1:11434/v1", "model": "qwen3"})
    for timeout, warned in (("120", True), ("30", False)):
        caplog.clear()
        settings = load_settings(chorus_home, {"CHORUS_LLM__TIMEOUT_SECONDS": timeout})
        client = LLMClient(settings.llm)
        await client.aclose()
        assert ("hung primary uses up the turn" in caplog.text) is warned

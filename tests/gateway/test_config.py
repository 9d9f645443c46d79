"""Configuration: config.yaml + environment into one typed Settings."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from gateway.config import load_settings, resolve_home, secret_paths
from gateway.errors import ConfigError


def write_config(home: Path, text: str, mode: int = 0o600) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_defaults_without_any_file(chorus_home: Path) -> None:
    settings = load_settings()
    assert settings.home == chorus_home
    assert settings.sessions.idle_minutes == 240
    assert settings.sessions.daily_reset_hour == 4
    assert settings.sessions.timezone == "UTC"
    assert settings.memory.memory_char_limit == 2200
    assert settings.memory.user_char_limit == 1375
    assert settings.auth.policy == "allowlist"
    assert settings.auth.admins == []
    assert settings.llm.api_key is None
    assert settings.redis.url is None
    assert settings.gateway.http.host == "127.0.0.1"


def test_home_is_created_private(chorus_home: Path) -> None:
    assert not chorus_home.exists()
    load_settings()
    assert chorus_home.is_dir()
    assert stat.S_IMODE(chorus_home.stat().st_mode) == 0o700


def test_home_defaults_to_dot_chorus() -> None:
    assert resolve_home({}) == Path("~/.chorus").expanduser()
    assert resolve_home({"CHORUS_HOME": "/srv/x"}) == Path("/srv/x")


def test_yaml_is_read(chorus_home: Path) -> None:
    write_config(
        chorus_home,
        "sessions:\n  idle_minutes: 30\n  scope: chat\nauth:\n  admins: ['telegram:1']\n"
        "llm:\n  model: local-model\n",
    )
    settings = load_settings()
    assert settings.sessions.idle_minutes == 30
    assert settings.sessions.scope == "chat"
    assert settings.auth.admins == ["telegram:1"]
    assert settings.llm.model == "local-model"


def test_environment_wins_over_yaml(chorus_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(chorus_home, "sessions:\n  idle_minutes: 30\n  max_live: 7\n")
    monkeypatch.setenv("CHORUS_SESSIONS__IDLE_MINUTES", "0.5")
    settings = load_settings()
    assert settings.sessions.idle_minutes == 0.5
    assert settings.sessions.max_live == 7  # untouched keys of the section stay


def test_nested_and_list_variables(chorus_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHORUS_GATEWAY__HTTP__PORT", "9999")
    monkeypatch.setenv("CHORUS_AUTH__ADMINS", "telegram:1, slack:U2")
    monkeypatch.setenv("CHORUS_AUTH__ALLOWED_USERS", '["discord:3"]')
    monkeypatch.setenv("CHORUS_SESSIONS__DAILY_RESET_HOUR", "null")
    settings = load_settings()
    assert settings.gateway.http.port == 9999
    assert settings.auth.admins == ["telegram:1", "slack:U2"]
    assert settings.auth.allowed_users == ["discord:3"]
    assert settings.sessions.daily_reset_hour is None


def test_well_known_variables(chorus_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "OPENAI_API_KEY": ("llm", "api_key"),
        "TELEGRAM_BOT_TOKEN": ("telegram", "token"),
        "DISCORD_BOT_TOKEN": ("discord", "token"),
        "SLACK_BOT_TOKEN": ("slack", "bot_token"),
        "SLACK_APP_TOKEN": ("slack", "app_token"),
        "SLACK_SIGNING_SECRET": ("slack", "signing_secret"),
    }
    for name in values:
        monkeypatch.setenv(name, f"value-of-{name}")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    settings = load_settings()
    for name, (section, key) in values.items():
        secret = getattr(getattr(settings, section), key)
        assert secret.get_secret_value() == f"value-of-{name}"
        assert f"value-of-{name}" not in repr(settings)
    assert settings.llm.base_url == "http://127.0.0.1:1/v1"


def test_chorus_variable_beats_well_known(
    chorus_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "generic")
    monkeypatch.setenv("CHORUS_LLM__API_KEY", "specific")
    assert load_settings().llm.api_key.get_secret_value() == "specific"  # type: ignore[union-attr]


def test_secrets_are_secretstr() -> None:
    paths = {".".join(p) for p in secret_paths()}
    assert {
        "llm.api_key",
        "telegram.token",
        "discord.token",
        "slack.bot_token",
        "slack.app_token",
        "slack.signing_secret",
        "redis.url",
        "telegram.webhook_secret",
    } <= paths


@pytest.mark.parametrize(
    ("yaml_text", "needles"),
    [
        ("sessions:\n  idle_minutes: soon\n", ["sessions.idle_minutes", "number", "soon"]),
        ("sessions:\n  scope: everyone\n", ["sessions.scope", "'user' or 'chat'"]),
        ("gateway:\n  http:\n    port: 70000\n", ["gateway.http.port", "65535"]),
        ("sessions:\n  idel_minutes: 3\n", ["sessions.idel_minutes", "unknown setting"]),
        ("sessions:\n  timezone: Mars/Olympus\n", ["sessions.timezone", "Mars/Olympus"]),
        ("auth:\n  admins: telegram:1\n", ["auth.admins", "list"]),
        ("- just\n- a list\n", ["mapping"]),
        ("sessions: [unclosed\n", ["line"]),
    ],
)
def test_bad_config_names_key_and_type(
    chorus_home: Path, yaml_text: str, needles: list[str]
) -> None:
    write_config(chorus_home, yaml_text)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    for needle in needles:
        assert needle in message
    assert "Traceback" not in message


def test_bad_env_value_names_the_variable(
    chorus_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHORUS_SESSIONS__MAX_LIVE", "lots")
    with pytest.raises(ConfigError, match=r"sessions.max_live \(CHORUS_SESSIONS__MAX_LIVE\)"):
        load_settings()


def test_unknown_env_setting_is_named(chorus_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHORUS_SESIONS__IDLE_MINUTES", "3")
    with pytest.raises(ConfigError, match="CHORUS_SESIONS__IDLE_MINUTES"):
        load_settings()


def test_invalid_secret_is_never_echoed(chorus_home: Path) -> None:
    write_config(chorus_home, "llm:\n  api_key: [sk-very-secret-value]\n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "llm.api_key" in str(info.value)
    assert "sk-very-secret-value" not in str(info.value)


def test_secrets_in_world_readable_file_are_refused(chorus_home: Path) -> None:
    path = write_config(chorus_home, "llm:\n  api_key: sk-abc\n", mode=0o644)
    with pytest.raises(ConfigError, match="chmod 600") as info:
        load_settings()
    assert "sk-abc" not in str(info.value)
    path.chmod(0o600)
    assert load_settings().llm.api_key.get_secret_value() == "sk-abc"  # type: ignore[union-attr]


def test_world_readable_file_without_secrets_is_fine(chorus_home: Path) -> None:
    write_config(chorus_home, "llm:\n  model: m\n", mode=0o644)
    assert load_settings().llm.model == "m"


def test_secrets_file(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text("OPENAI_API_KEY=sk-from-file\nCHORUS_LLM__MODEL=filemodel\n")
    secrets.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_settings()
    secrets.chmod(0o600)
    settings = load_settings()
    assert settings.llm.api_key.get_secret_value() == "sk-from-file"  # type: ignore[union-attr]
    assert settings.llm.model == "filemodel"


def test_process_environment_wins_over_secrets_file(
    chorus_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chorus_home.mkdir(mode=0o700)
    (chorus_home / ".env").write_text("CHORUS_LLM__MODEL=filemodel\n")
    os.chmod(chorus_home / ".env", 0o600)
    monkeypatch.setenv("CHORUS_LLM__MODEL", "envmodel")
    assert load_settings().llm.model == "envmodel"


def test_loading_logs_no_secret(
    chorus_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-appear")
    load_settings()
    assert "sk-should-not-appear" not in caplog.text


def test_home_that_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("CHORUS_HOME", str(blocker))
    with pytest.raises(ConfigError, match="not a directory"):
        load_settings()


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("memory:\n  providers:\n    honcho:\n      api_key: hk-abcdef123\n", "honcho.api_key"),
        ("memory:\n  providers:\n    mem0:\n      api_key: hk-abcdef123\n", "mem0.api_key"),
        ("memory:\n  providers:\n    gone:\n      token: hk-abcdef123\n", "gone.token"),
    ],
)
def test_a_provider_secret_in_a_world_readable_file_is_refused(
    chorus_home: Path, section: str, key: str
) -> None:
    path = write_config(chorus_home, section, mode=0o644)
    with pytest.raises(ConfigError, match="chmod 600") as info:
        load_settings()
    assert f"memory.providers.{key}" in str(info.value)
    assert "hk-abcdef123" not in str(info.value)
    path.chmod(0o600)
    load_settings()


def test_a_provider_setting_that_is_no_secret_may_be_world_readable(chorus_home: Path) -> None:
    text = "memory:\n  providers:\n    honcho:\n      workspace_id: team\n      timeout: 5\n"
    write_config(chorus_home, text, mode=0o644)
    assert load_settings().memory.providers["honcho"]["workspace_id"] == "team"


def test_a_metrics_port_that_is_the_webhook_port_is_refused(
    chorus_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(chorus_home, "gateway:\n  http:\n    port: 8081\n  metrics:\n    port: 8081\n")
    same = r"gateway\.metrics\.port 8081 is gateway\.http\.port too"
    with pytest.raises(ConfigError, match=same):
        load_settings()
    monkeypatch.setenv("CHORUS_GATEWAY__METRICS__PORT", "9090")
    assert load_settings().gateway.metrics.port == 9090

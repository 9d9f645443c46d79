"""Secrets from files (Docker and k8s secrets): ``<NAME>_FILE`` holds the path of the value.

``chorus doctor`` runs as a real process with the Telegram token and the LLM key
given only as files: it reaches the fake Telegram (which knows only that token)
and the fake OpenAI endpoint (which requires that key), and no output line, at
DEBUG, shows either value. A missing file and a secret given both ways are one clear
line each; an empty file leaves the secret unset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings, secrets_environment
from gateway.errors import ConfigError
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.gateway.test_cli import run

TOKEN = "123:token-from-a-file"
API_KEY = "sk-key-from-a-file"


def secret_file(directory: Path, name: str, value: str) -> Path:
    path = directory / name
    path.write_text(value)
    path.chmod(0o400)
    return path


def test_doctor_reads_the_telegram_token_and_llm_key_from_files_and_never_shows_them(
    chorus_home: Path, tmp_path: Path
) -> None:
    token_file = secret_file(tmp_path, "telegram_token", TOKEN + "\n")  # docker's newline
    key_file = secret_file(tmp_path, "openai_api_key", API_KEY)
    with FakeTelegram(token=TOKEN) as telegram, FakeOpenAI(api_key=API_KEY) as llm:
        env = {
            "TELEGRAM_BOT_TOKEN_FILE": str(token_file),
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
            "OPENAI_API_KEY_FILE": str(key_file),
            "OPENAI_BASE_URL": llm.base_url,
            "CHORUS_LOG_LEVEL": "DEBUG",
        }
        result = run(chorus_home, "doctor", env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "@chorus_test_bot" in result.stdout
    assert "[ok  ] llm" in result.stdout
    assert TOKEN not in output
    assert API_KEY not in output


def test_a_missing_secret_file_is_one_clear_line(chorus_home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "token"
    result = run(chorus_home, "gateway", env={"TELEGRAM_BOT_TOKEN_FILE": str(missing)})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"TELEGRAM_BOT_TOKEN_FILE: cannot read {missing}: No such file or directory" in (
        result.stderr
    )


def test_a_secret_and_its_file_both_set_is_an_error(chorus_home: Path, tmp_path: Path) -> None:
    token_file = secret_file(tmp_path, "token", TOKEN)
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_BOT_TOKEN_FILE": str(token_file)}
    with pytest.raises(
        ConfigError, match="TELEGRAM_BOT_TOKEN and TELEGRAM_BOT_TOKEN_FILE are both"
    ):
        load_settings(chorus_home, env)


def test_an_empty_secret_file_leaves_the_secret_unset(chorus_home: Path, tmp_path: Path) -> None:
    """Like an empty variable: a k8s Secret's placeholder ("") is no key at all."""
    key_file = secret_file(tmp_path, "key", "\n")
    settings = load_settings(chorus_home, {"OPENAI_API_KEY_FILE": str(key_file)})
    assert settings.llm.api_key is None


def test_every_secret_setting_can_come_from_a_file(chorus_home: Path, tmp_path: Path) -> None:
    """The ``CHORUS_*`` spelling too, e.g. the Redis URL with its password."""
    url = "redis://:pa55word@redis:6379/0"
    env = {
        "CHORUS_REDIS__URL_FILE": str(secret_file(tmp_path, "redis_url", url)),
        "SLACK_SIGNING_SECRET_FILE": str(secret_file(tmp_path, "signing", "s3cret")),
    }
    settings = load_settings(chorus_home, env)
    assert settings.redis.url is not None
    assert settings.redis.url.get_secret_value() == url
    assert settings.slack.signing_secret is not None
    assert settings.slack.signing_secret.get_secret_value() == "s3cret"


def test_a_memory_providers_secret_comes_from_its_file(chorus_home: Path, tmp_path: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    key_file = secret_file(tmp_path, "mem0", "m0-key")
    env = secrets_environment(chorus_home, {"MEM0_API_KEY_FILE": str(key_file)})
    assert env["MEM0_API_KEY"] == "m0-key"
    assert "MEM0_API_KEY_FILE" not in env

"""Platform ids become path components that can neither escape nor collide."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.errors import MemoryPathError
from memory.paths import ChorusPaths, UserKey, safe_component

HOSTILE_IDS = [
    "../../etc",
    "..",
    ".",
    "a/b",
    "a\\b",
    "/abs",
    "\x00",
    "a\x00b",
    "\n\r\t\x1b[31m",
    "x" * 10_000,
    "x" * 10_000 + "y",
    "аdmin",  # Cyrillic а
    "admin",
    "ＡＤＭＩＮ",  # fullwidth
    "ADMIN",
    "e\u0301",  # e + combining accent
    "é",  # precomposed
    "%41",
    "A",
    "~",
    "%7E",
    "user name",
    "emoji-🙂",
    "\ud800",  # lone surrogate
]


def test_plain_ids_stay_readable() -> None:
    assert safe_component("123456789") == "123456789"
    assert safe_component("U012AB3CD") == "U012AB3CD"
    assert safe_component("-100123") == "-100123"


@pytest.mark.parametrize("raw", HOSTILE_IDS, ids=range(len(HOSTILE_IDS)))
def test_hostile_ids_stay_inside_users_dir(tmp_path: Path, raw: str) -> None:
    paths = ChorusPaths(tmp_path)
    user_file = paths.user_file(UserKey("telegram", raw))
    component = safe_component(raw)
    assert "/" not in component and "\\" not in component and "\x00" not in component
    assert component not in {".", ".."}
    assert all(ch.isprintable() and ch.isascii() for ch in component)
    assert len(component) <= 255
    resolved = Path(os.path.realpath(user_file))
    assert resolved.is_relative_to(Path(os.path.realpath(paths.users_dir)) / "telegram")
    assert user_file.parent.parent == paths.users_dir / "telegram"


def test_hostile_ids_never_collide() -> None:
    components = [safe_component(raw) for raw in HOSTILE_IDS]
    assert len(set(components)) == len(HOSTILE_IDS)


def test_long_ids_are_hashed_and_distinct() -> None:
    a = safe_component("x" * 10_000)
    b = safe_component("x" * 9_999 + "z")
    assert a != b
    assert "~" in a and len(a) < 200


def test_directories_can_really_be_created(tmp_path: Path) -> None:
    paths = ChorusPaths(tmp_path)
    for raw in HOSTILE_IDS:
        target = paths.user_dir(UserKey("discord", raw))
        target.mkdir(parents=True)
        (target / "USER.md").write_text(raw.encode("utf-8", "surrogatepass").hex())
    made = list((paths.users_dir / "discord").iterdir())
    assert len(made) == len(HOSTILE_IDS)


@pytest.mark.parametrize("platform", ["../x", "Tele gram", "a:b", "a#chat", "", "a/b"])
def test_a_platform_name_is_refused_unless_plain(platform: str) -> None:
    with pytest.raises(MemoryPathError):
        UserKey(platform, "1")


def test_empty_id_is_refused() -> None:
    with pytest.raises(MemoryPathError):
        safe_component("")


def test_layout(tmp_path: Path) -> None:
    paths = ChorusPaths(tmp_path)
    assert paths.memory_file == tmp_path / "memories" / "MEMORY.md"
    assert paths.user_file(UserKey("telegram", "42")) == (
        tmp_path / "memories" / "users" / "telegram" / "42" / "USER.md"
    )
    assert paths.user_file(UserKey.for_chat("telegram", "-100")) == (
        tmp_path / "memories" / "chats" / "telegram" / "-100" / "USER.md"
    )
    assert paths.state_db == tmp_path / "state.db"


def test_parse_user_key() -> None:
    assert UserKey.parse("telegram:123") == UserKey("telegram", "123")
    assert UserKey.parse("Slack:T1:U2") == UserKey("slack", "T1:U2")
    assert UserKey.parse("telegram:123").key == "telegram:123"
    assert UserKey.parse("telegram#chat:-100") == UserKey.for_chat("telegram", "-100")
    for bad in ("telegram", ":1", "telegram:", "", "tele gram:1", "#chat:1", "a/b:1"):
        with pytest.raises(MemoryPathError, match="PLATFORM:ID"):
            UserKey.parse(bad)
    with pytest.raises(MemoryPathError):
        UserKey.parse("telegram:1 2")


@pytest.mark.parametrize("user_id", ["chat-5", "#chat:5", "chat:5", "-100", "chat/5", "..%2Fchat"])
def test_no_user_id_reaches_a_chat_profile(tmp_path: Path, user_id: str) -> None:
    """A person's key and a chat's shared key are disjoint, as strings and as paths."""
    paths = ChorusPaths(tmp_path)
    person = UserKey("telegram", user_id)
    chats = {UserKey.for_chat("telegram", c) for c in ("5", "-100", "chat-5", user_id)}
    assert person not in chats
    assert all(str(person) != str(chat) for chat in chats)
    assert UserKey.parse(str(person)) == person and not UserKey.parse(str(person)).chat
    assert all(paths.user_file(person) != paths.user_file(chat) for chat in chats)
    assert paths.user_file(person).is_relative_to(paths.users_dir)


def test_a_providers_directory_per_user_is_private_and_apart(tmp_path: Path) -> None:
    from memory.providers import provider_dir

    alice = provider_dir(tmp_path, "holographic", "telegram:1")
    bob = provider_dir(tmp_path, "holographic", "telegram:2")
    group = provider_dir(tmp_path, "holographic", "slack#chat:C1")
    shared = provider_dir(tmp_path, "holographic")
    assert len({alice, bob, group, shared}) == 4
    for path in (alice, bob, group):
        assert path.is_dir() and shared in path.parents
        assert path.stat().st_mode & 0o777 == 0o700
    assert provider_dir(tmp_path, "../../etc", "telegram:1").is_relative_to(tmp_path / "providers")

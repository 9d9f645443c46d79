"""The memory threat scan, directly and through MemoryStore writes.

Two corpora: attack strings that must be refused (each of the holes an
adversarial pass found, and variants of them), and benign entries — several
languages, emoji with joiners and variation selectors, flags, shell notes —
that must be accepted.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from memory.store import MemoryStore, scan_memory_content
from memory.store._threats import THREAT_PATTERNS, make_visible
from tests.memory.threat_corpus import (
    ATTACKS,
    BENIGN_EXAMPLES,
    HIDDEN_CHARACTERS,
    THREAT_EXAMPLES,
)


def test_every_pattern_has_an_example() -> None:
    names = {name for _, name in THREAT_PATTERNS}
    assert {name for name, _ in THREAT_EXAMPLES} == names


@pytest.mark.parametrize(("threat", "text"), THREAT_EXAMPLES)
def test_threat_pattern_detected(threat: str, text: str) -> None:
    assert scan_memory_content(text) == f"Refused: content matches threat pattern '{threat}'"


def test_corpus_is_large_enough() -> None:
    assert len(ATTACKS) >= 80
    assert len(BENIGN_EXAMPLES) >= 80


@pytest.mark.parametrize("text", ATTACKS)
def test_attack_refused(text: str) -> None:
    assert scan_memory_content(text) is not None


@pytest.mark.parametrize("char", HIDDEN_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_hidden_character_detected(char: str) -> None:
    message = scan_memory_content(f"User lik{char}es tea")
    assert message is not None and f"U+{ord(char):04X}" in message
    assert unicodedata.name(char, "") in message


@pytest.mark.parametrize("text", BENIGN_EXAMPLES)
def test_benign_text_passes(text: str) -> None:
    assert scan_memory_content(text) is None


def test_hidden_characters_are_made_visible() -> None:
    shown = make_visible("ig\u200bnore \U000e0041")
    assert shown == "ig⟦U+200B ZERO WIDTH SPACE⟧nore ⟦U+E0041 TAG LATIN CAPITAL LETTER A⟧"
    assert make_visible("👨‍👩‍👧 ❤️") == "👨‍👩‍👧 ❤️"
    assert make_visible("ig\u200anore \u180b") == (
        "ig⟦U+200A HAIR SPACE⟧nore ⟦U+180B MONGOLIAN FREE VARIATION SELECTOR ONE⟧"
    )
    assert make_visible("a\u200a— b") == "a\u200a— b"


# -- through the store ----------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    store = MemoryStore(tmp_path / "MEMORY.md", tmp_path / "users" / "u1" / "USER.md")
    store.load_from_disk()
    assert store.add("memory", "User's name is Ada")["success"]
    return store


@pytest.mark.parametrize(("threat", "text"), THREAT_EXAMPLES)
@pytest.mark.parametrize("target", ["memory", "user"])
def test_store_refuses_threat_on_add(
    store: MemoryStore, target: str, threat: str, text: str
) -> None:
    before = store.memory_path.read_bytes()
    result = store.add(target, text)
    assert result["success"] is False
    assert f"'{threat}'" in result["message"]
    assert text not in result["entries"]
    assert store.memory_path.read_bytes() == before
    assert not store.user_path.exists()


@pytest.mark.parametrize(("threat", "text"), THREAT_EXAMPLES)
def test_store_refuses_threat_on_replace(store: MemoryStore, threat: str, text: str) -> None:
    before = store.memory_path.read_bytes()
    result = store.replace("memory", "Ada", text)
    assert result["success"] is False
    assert f"'{threat}'" in result["message"]
    assert result["entries"] == ["User's name is Ada"]
    assert store.memory_path.read_bytes() == before


@pytest.mark.parametrize("char", HIDDEN_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_store_refuses_hidden_character(store: MemoryStore, char: str) -> None:
    before = store.memory_path.read_bytes()
    for result in (
        store.add("memory", f"Pref{char}ers tea"),
        store.replace("memory", "Ada", f"User's name is Ada Love{char}lace"),
    ):
        assert result["success"] is False
        assert f"U+{ord(char):04X}" in result["message"]
    assert store.memory_path.read_bytes() == before


@pytest.mark.parametrize("text", BENIGN_EXAMPLES)
def test_store_accepts_benign_text(store: MemoryStore, text: str) -> None:
    result = store.add("user", text)
    assert result["success"] is True
    assert result["entries"] == [text]

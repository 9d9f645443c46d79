"""Which ``account_keys`` a provider built on the kit reads: a linked person's accounts only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plugins.memory._kit import Session

PERSON = "person:4e9058d129c70562"


def session(user_key: str, account_keys: Any) -> Session:
    kwargs = {"chorus_home": Path("/nonexistent"), "user_key": user_key}
    return Session.of("s1", {**kwargs, "account_keys": account_keys})


def test_a_person_reads_its_accounts_canonical_once_and_never_a_chat_or_itself() -> None:
    given = ["Telegram:1", "slack:U1", "telegram:1", "slack#chat:C1", "not a key", 7, PERSON]
    assert session(PERSON, given).account_keys == ("telegram:1", "slack:U1")


def test_an_account_or_a_chat_reads_no_other_key() -> None:
    assert session("telegram:1", ["slack:U1"]).account_keys == ()
    assert session("slack#chat:C1", ["telegram:1"]).account_keys == ()
    assert session(PERSON, "telegram:1").account_keys == ()  # not a list
    assert Session.of("s1", {"chorus_home": "/x", "user_key": PERSON}).account_keys == ()

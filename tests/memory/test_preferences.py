"""``PreferenceStore`` on SQLite and PostgreSQL: a person's own settings, and linked accounts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gateway.media import StoredVoiceChoice
from memory.database import Location
from memory.paths import ChorusPaths
from memory.people import PeopleStore
from memory.preferences import PreferenceStore

pytest_plugins = ["tests.fakes.tables_backends"]

CHORUS = Path(sys.executable).with_name("chorus")


def test_a_setting_is_kept_per_person_and_replaced_when_set_again(where: Location) -> None:
    with PreferenceStore(where) as store:
        assert store.get(["telegram:1"], "voice_replies") is None
        store.set("telegram:1", "voice_replies", "on", 1.0)
        store.set("telegram:2", "voice_replies", "off", 1.0)
        store.set("telegram:1", "voice_replies", "off", 2.0)
        assert store.get(["telegram:1"], "voice_replies") == "off"
        assert store.get(["telegram:2"], "voice_replies") == "off"
        assert store.get(["telegram:1"], "other") is None
    with PreferenceStore(where) as again:  # kept in the database, not the process
        assert again.get(["telegram:1"], "voice_replies") == "off"


def test_the_first_of_several_keys_that_set_it_wins(where: Location) -> None:
    with PreferenceStore(where) as store:
        store.set("telegram:1", "voice_replies", "on", 1.0)
        assert store.get(["person:a", "telegram:1"], "voice_replies") == "on"
        store.set("person:a", "voice_replies", "off", 2.0)
        assert store.get(["person:a", "telegram:1"], "voice_replies") == "off"
        assert store.get([], "voice_replies") is None


def test_voice_follows_the_person_an_account_is_linked_into(where: Location) -> None:
    with PreferenceStore(where) as store, PeopleStore(where) as people:
        choice = StoredVoiceChoice(store, people)
        assert not choice.voice_on("telegram:1")
        choice.set_voice("telegram:1", True, 1.0)  # before linking: the account's own
        people.link("telegram:1", "slack:U1", by="telegram:1", at=2.0)
        assert choice.voice_on("telegram:1") and not choice.voice_on("slack:U1")
        choice.set_voice("slack:U1", True, 3.0)  # now the person's, for both accounts
        assert choice.voice_on("slack:U1") and choice.voice_on("telegram:1")
        choice.set_voice("telegram:1", False, 4.0)
        assert not choice.voice_on("slack:U1") and not choice.voice_on("telegram:1")


def test_migrate_db_takes_the_preferences_along(chorus_home: Path, postgres_url: str) -> None:
    chorus_home.mkdir(mode=0o700)
    with PreferenceStore(ChorusPaths(chorus_home).state_db) as store:
        store.set("telegram:42", "voice_replies", "on", 1.0)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(chorus_home), "COLUMNS": "200"})
    moved = subprocess.run(
        [str(CHORUS), "migrate-db", "--to", postgres_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert moved.returncode == 0, moved.stderr
    assert "person_preferences: 1 rows" in moved.stdout
    with PreferenceStore(postgres_url) as store:
        assert store.get(["telegram:42"], "voice_replies") == "on"

"""probe, related and reason through the HRR algebra: bindings unbound from the bank.

The proof that answers come from the vectors and not from the entity-link
tables: links deleted from ``fact_entities`` leave the joins blind, while the
bindings stored with the facts still answer.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from plugins.memory.holographic import HolographicProvider
from plugins.memory.holographic._algebra import MATCH, entity_atoms
from tests.plugins.holographic_cases import open_provider, tool

pytest.importorskip("numpy")


def facts_db(home: Path) -> Path:
    return home / "providers" / "holographic" / "users" / "telegram" / "1" / "facts.db"


def unlink(home: Path, content: str) -> None:
    """Delete a fact's entity links from the join tables (its stored binding stays)."""
    with sqlite3.connect(facts_db(home)) as db:
        (fact_id,) = db.execute("SELECT id FROM facts WHERE content = ?", (content,)).fetchone()
        db.execute("DELETE FROM fact_entities WHERE fact_id = ?", (fact_id,))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def both(home: Path) -> tuple[HolographicProvider, HolographicProvider]:
    """Two providers over the same store: one unbinding, one joining."""
    unbinding = open_provider(home, probe_mode="unbind")
    joining = open_provider(home, probe_mode="join")
    assert unbinding.unbind and not joining.unbind
    return unbinding, joining


def test_reason_and_related_answer_from_the_bindings_when_the_links_are_gone(home: Path) -> None:
    unbinding, joining = both(home)
    for text in ("Anna met Tom in Lisbon.", "Tom moved to Berlin.", "Anna lives in Porto."):
        tool(unbinding, action="add", content=text)
    unlink(home, "Anna met Tom in Lisbon.")

    joined = tool(joining, action="reason", entities=["Anna", "Tom", "Lisbon"])
    assert joined["all_matched"] is False and joined["matched"] == 1
    assert "Anna met Tom in Lisbon." not in [f["content"] for f in joined["facts"]]
    unbound = tool(unbinding, action="reason", entities=["Anna", "Tom", "Lisbon"])
    assert unbound["all_matched"] is True and unbound["matched"] == 3
    assert [f["content"] for f in unbound["facts"]] == ["Anna met Tom in Lisbon."]

    joined_related = tool(joining, action="related", entity="Tom")["related"]
    assert {r["entity"] for r in joined_related} == {"Berlin"}
    related = {r["entity"]: r for r in tool(unbinding, action="related", entity="Tom")["related"]}
    assert set(related) == {"Anna", "Lisbon", "Berlin"}
    assert [f["content"] for f in related["Lisbon"]["facts"]] == ["Anna met Tom in Lisbon."]
    unbinding.shutdown()
    joining.shutdown()


def test_probe_puts_the_facts_bound_to_the_entity_before_mere_mentions(home: Path) -> None:
    unbinding, joining = both(home)
    tool(unbinding, action="add", content="Anna lives in Lisbon.")
    mention = tool(unbinding, action="add", content="lunch with anna on friday")["fact_id"]
    for _ in range(3):
        unbinding.handle_tool_call("fact_feedback", {"fact_id": mention, "helpful": True})
    unlink(home, "Anna lives in Lisbon.")  # the join sees only a mention now

    joined = [f["content"] for f in tool(joining, action="probe", entity="Anna")["facts"]]
    assert joined == ["lunch with anna on friday", "Anna lives in Lisbon."]  # by trust
    unbound = [f["content"] for f in tool(unbinding, action="probe", entity="Anna")["facts"]]
    assert unbound == ["Anna lives in Lisbon.", "lunch with anna on friday"]  # bound first
    unbinding.shutdown()
    joining.shutdown()


def test_the_bank_recovers_every_entity_s_facts_exactly(home: Path) -> None:
    """60 facts over 12 people and 8 places: each probe through the algebra is exact."""
    provider = open_provider(home, probe_mode="unbind")
    people = ["Anna", "Bruno", "Chen", "Dara", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas"]
    people += ["Kiri", "Lena"]
    places = ["Lisbon", "Berlin", "Oslo", "Kyoto", "Lima", "Cairo", "Quito", "Perth"]
    chooser = random.Random(7)
    about: dict[str, set[str]] = {name: set() for name in people + places}
    for number in range(60):
        person, other, place = [*chooser.sample(people, 2), chooser.choice(places)]
        text = f"{person} visited {place} with {other} on trip {number}."
        tool(provider, action="add", content=text)
        for name in (person, other, place):
            about[name].add(text)
    for name, wanted in about.items():
        found = tool(provider, action="probe", entity=name, limit=50)["facts"]
        assert {f["content"] for f in found} == wanted, name

    store = provider._store()
    bank = store.bank()
    assert bank is not None and len(bank.ids) == 60
    keys = [n.lower() for n in people + places]
    atoms = entity_atoms(keys)
    for fact in store.recent(None, 60):
        scores = bank.entities_of(fact.id, atoms)
        read_back = {k for k, s in zip(keys, scores, strict=True) if s >= MATCH}
        assert read_back == {e.lower() for e in fact.entities if e.lower() in keys}
    provider.shutdown()


def test_a_database_of_the_first_schema_gets_its_bindings_on_first_use(home: Path) -> None:
    provider = open_provider(home)
    tool(provider, action="add", content="Anna met Tom in Lisbon.")
    tool(provider, action="add", content="Tom moved to Berlin.")
    provider.shutdown()
    with sqlite3.connect(facts_db(home)) as db:  # back to schema 1: no binding, no embedding
        db.execute("ALTER TABLE facts DROP COLUMN binding")
        db.execute("ALTER TABLE facts DROP COLUMN embedding")
        db.execute("PRAGMA user_version = 1")

    reopened = open_provider(home, probe_mode="unbind")
    found = tool(reopened, action="reason", entities=["Anna", "Tom"])
    assert [f["content"] for f in found["facts"]] == ["Anna met Tom in Lisbon."]
    reopened.shutdown()
    with sqlite3.connect(facts_db(home)) as db:
        columns = {r[1] for r in db.execute("PRAGMA table_info(facts)")}
        assert {"binding", "embedding"} <= columns
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        assert all(r[0] for r in db.execute("SELECT length(binding) FROM facts"))


def test_facts_an_older_chorus_changed_are_bound_again(home: Path) -> None:
    provider = open_provider(home, probe_mode="unbind")
    tool(provider, action="add", content="Anna met Tom in Lisbon.")
    provider.shutdown()
    with sqlite3.connect(facts_db(home)) as db:  # what an older chorus's update does
        db.execute(
            "UPDATE facts SET content = 'Anna met Maya in Lisbon.',"
            " norm = 'anna met maya in lisbon', terms = 'anna met maya lisbon'"
        )
        db.execute("DELETE FROM fact_entities")
        db.execute(
            "INSERT INTO entities (name, display) VALUES ('maya', 'Maya')"
            " ON CONFLICT (name) DO NOTHING"
        )
        db.execute(
            "INSERT INTO fact_entities SELECT 1, id FROM entities"
            " WHERE name IN ('anna', 'maya', 'lisbon')"
        )
        db.execute("PRAGMA user_version = 1")

    reopened = open_provider(home, probe_mode="unbind")
    assert tool(reopened, action="reason", entities=["Anna", "Tom"])["all_matched"] is False
    found = tool(reopened, action="reason", entities=["Anna", "Maya"])
    assert [f["content"] for f in found["facts"]] == ["Anna met Maya in Lisbon."]
    reopened.shutdown()

"""``PeopleStore`` on SQLite and on PostgreSQL: links, unlinks and one-time link codes."""

from __future__ import annotations

from pathlib import Path

from memory.database import Location
from memory.paths import ChorusPaths, UserKey
from memory.people import LinkCode, PeopleStore, link_accounts
from memory.store import MemoryStore

pytest_plugins = ["tests.fakes.tables_backends"]

TG = "telegram:1"
SL = "slack:U1"
DC = "discord:9"


def test_an_unlinked_account_is_its_own_person(where: Location) -> None:
    with PeopleStore(where) as people:
        assert people.person_of(TG) == TG
        assert people.accounts_of(TG) == [TG]
        assert people.unlink(TG) is None


def test_link_join_and_unlink(where: Location) -> None:
    with PeopleStore(where) as people, PeopleStore(where) as replica:
        first = people.link(TG, SL, by=TG, at=1.0)
        assert first.person.startswith("person:") and first.joined == (TG, SL)
        assert replica.person_of(TG) == replica.person_of(SL) == first.person
        assert people.link(SL, TG, by=SL, at=2.0).joined == ()  # one person already
        third = people.link(DC, SL, by=DC, at=3.0)  # a new account joins the person
        assert third.person == first.person and third.joined == (DC,)
        assert people.accounts_of(first.person) == sorted([TG, SL, DC])
        assert people.unlink(DC) == first.person
        assert replica.person_of(DC) == DC
        assert replica.accounts_of(first.person) == sorted([TG, SL])


def test_two_persons_joined_become_one(where: Location) -> None:
    with PeopleStore(where) as people:
        a = people.link(TG, SL, by="admin", at=1.0).person
        b = people.link(DC, "slack:U2", by="admin", at=1.0).person
        joined = people.link(TG, DC, by="admin", at=2.0)
        assert joined.person == a and joined.joined == (b,)
        assert people.accounts_of(a) == sorted([TG, SL, DC, "slack:U2"])


def test_a_code_works_once_before_it_expires_from_another_platform(where: Location) -> None:
    with PeopleStore(where) as people, PeopleStore(where) as replica:
        people.add_code(LinkCode("h1", TG, 100.0, 700.0))
        assert replica.redeem_code("nope", SL, 200.0) == ("unknown", None)
        assert replica.redeem_code("h1", "telegram:2", 200.0) == ("same", TG)
        assert replica.redeem_code("h1", SL, 700.0) == ("expired", TG)
        assert replica.redeem_code("h1", SL, 200.0) == ("ok", TG)
        assert people.redeem_code("h1", DC, 201.0) == ("used", TG)
        people.add_code(LinkCode("h2", TG, 300.0, 900.0))
        people.add_code(LinkCode("h3", TG, 310.0, 910.0))  # the newer code replaces it
        assert people.redeem_code("h2", SL, 320.0) == ("expired", TG)
        assert people.redeem_code("h3", SL, 320.0) == ("ok", TG)


def test_code_requests_are_limited_per_hour(where: Location) -> None:
    with PeopleStore(where) as people:
        assert all(people.take_code_quota(TG, 10.0 + n, 3600.0, 3) for n in range(3))
        assert not people.take_code_quota(TG, 20.0, 3600.0, 3)
        assert people.take_code_quota(SL, 20.0, 3600.0, 3)
        assert people.take_code_quota(TG, 3611.0, 3600.0, 3)  # the first has aged out


def test_linking_joins_the_profiles_within_the_limit(tmp_path: Path) -> None:
    paths = ChorusPaths(tmp_path)

    def store(key: UserKey) -> MemoryStore:
        return MemoryStore(paths.memory_file, paths.user_file(key), user_char_limit=60)

    tg, sl = store(UserKey.parse(TG)), store(UserKey.parse(SL))
    tg.add("user", "Ann likes teal")
    tg.add("user", "Ann works nights")
    sl.add("user", "Ann works nights")
    sl.add("user", "Ann has a cat called Miso")
    sl.add("user", "Ann plays the cello")
    with PeopleStore(tmp_path / "state.db") as people:
        outcome = link_accounts(
            people, UserKey.parse(TG), UserKey.parse(SL), by=TG, at=1.0, stores=store
        )
    person = store(UserKey.parse(outcome.person))
    person.load_from_disk()
    assert person.user_entries[:2] == ["Ann likes teal", "Ann works nights"]
    assert outcome.merge.duplicates == 1
    assert outcome.merge.left_out  # over 60 characters: kept aside, not lost
    for entry in outcome.merge.left_out:
        assert entry not in person.user_entries
        sl.load_from_disk()
        assert entry in sl.user_entries

"""``PairingRequests``: one request per person an hour, decided once, its cards kept;
on SQLite and on PostgreSQL (two stores on one ``where`` are two replicas)."""

from __future__ import annotations

from gateway.access import PairingCard, PairingRequests
from memory.database import Location

pytest_plugins = ["tests.fakes.tables_backends"]

HOUR = 3600.0


def test_one_request_per_person_within_the_window(where: Location) -> None:
    with PairingRequests(where) as first, PairingRequests(where) as other_replica:
        opened = first.open("telegram:9", "Zed", "telegram", "9", 1000.0, HOUR)
        assert opened is not None and opened.status == "pending"
        assert (
            other_replica.open("telegram:9", "Zed", "telegram", "9", 1000.0 + HOUR - 1, HOUR)
            is None
        )
        assert first.open("telegram:8", "Yan", "telegram", "8", 1001.0, HOUR) is not None
        later = other_replica.open("telegram:9", "Zed", "telegram", "9", 1000.0 + HOUR + 1, HOUR)
        assert later is not None and later.id != opened.id


def test_a_request_is_decided_once_and_keeps_its_cards(where: Location) -> None:
    with PairingRequests(where) as store, PairingRequests(where) as other_replica:
        opened = store.open("slack:U9", "", "slack", "D9", 5.0, HOUR)
        assert opened is not None
        store.add_card(opened.id, PairingCard("slack", "D1", "171.1"))
        store.add_card(opened.id, PairingCard("telegram", "1000", "77"))
        assert other_replica.cards(opened.id) == [
            PairingCard("slack", "D1", "171.1"),
            PairingCard("telegram", "1000", "77"),
        ]
        assert store.decide(opened.id, "approved", "slack:UADMIN", 6.0)
        assert not other_replica.decide(opened.id, "denied", "slack:UOTHER", 7.0)
        decided = other_replica.get(opened.id)
        assert decided is not None
        assert (decided.status, decided.decided_by, decided.decided_at) == (
            "approved",
            "slack:UADMIN",
            6.0,
        )
        assert store.get("nope") is None


def test_deciding_a_person_settles_only_their_pending_requests(where: Location) -> None:
    with PairingRequests(where) as store:
        old = store.open("discord:1", "a", "discord", "d1", 0.0, HOUR)
        new = store.open("discord:1", "a", "discord", "d1", 2 * HOUR, HOUR)
        someone = store.open("discord:2", "b", "discord", "d2", 0.0, HOUR)
        assert old is not None and new is not None and someone is not None
        store.decide(old.id, "expired", None, 1.0)
        settled = store.settle_user("discord:1", "denied", "discord:99", 3 * HOUR)
        assert [r.id for r in settled] == [new.id]
        assert settled[0].status == "denied" and settled[0].decided_by == "discord:99"
        assert store.settle_user("discord:1", "approved", "discord:99", 4 * HOUR) == []
        kept = store.get(someone.id)
        assert kept is not None and kept.status == "pending"
        store.add_card(new.id, PairingCard("discord", "c", "m"))
        store.forget_user("discord:1")
        assert store.get(new.id) is None and store.cards(new.id) == []
        assert store.get(someone.id) is not None

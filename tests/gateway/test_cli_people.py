"""``chorus users link|unlink``: accounts joined into one person from the command line."""

from __future__ import annotations

from pathlib import Path

from gateway.access import GatewayDB
from memory.paths import ChorusPaths, UserKey
from memory.people import PeopleStore
from memory.store import MemoryStore
from tests.gateway.test_cli_users import run


def test_link_and_unlink_from_the_cli_are_audited(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    paths = ChorusPaths(chorus_home)
    telegram = MemoryStore(paths.memory_file, paths.user_file(UserKey("telegram", "5")))
    telegram.add("user", "Likes long walks")

    linked = run(chorus_home, "link", "telegram:5", "slack:U5")
    assert linked.returncode == 0, linked.stderr
    assert "Linked telegram:5 and slack:U5 into person:" in linked.stdout
    with PeopleStore(paths.state_db) as people:
        person = people.person_of("slack:U5")
        assert person == people.person_of("telegram:5") != "slack:U5"
    profile = MemoryStore(paths.memory_file, paths.user_file(UserKey.parse(person)))
    profile.load_from_disk()
    assert profile.user_entries == ["Likes long walks"]

    assert run(chorus_home, "link", "telegram:5", "nonsense").returncode == 1
    unlinked = run(chorus_home, "unlink", "slack:U5")
    assert unlinked.returncode == 0, unlinked.stderr
    assert run(chorus_home, "unlink", "slack:U5").returncode == 1  # not linked any more
    with PeopleStore(paths.state_db) as people:
        assert people.person_of("slack:U5") == "slack:U5"
    with GatewayDB(paths.state_db) as db:
        rows = [(r.command, r.args, r.outcome) for r in reversed(db.audit_entries())]
    assert rows == [
        ("users link", "telegram:5 slack:U5", "ok"),
        ("users link", "telegram:5 nonsense", "invalid"),
        ("users unlink", "slack:U5", "ok"),
        ("users unlink", "slack:U5", "not_found"),
    ]

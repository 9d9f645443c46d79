"""``/secret``: a person's own credentials, through the whole gateway on Telegram.

The value is the person's next direct message: stored sealed, deleted on Telegram,
and never seen by the model, the transcript (and its search), the inbox or a log.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from memory.database import Location
from memory.secrets import SecretKey, SecretStore
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN, BOB, GROUP, GatewayFactory

pytest_plugins = ["tests.fakes.postgres_fixtures"]

KEY = "operator-key-0123456789-abcdefghijklmnop"
VALUE = "ghp_Zq8sVt31UniqueSecretValue"
ANN_KEY = f"telegram:{ANN}"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, chorus_home: Path) -> tuple[Location, dict[str, str]]:
    """Where the gateway keeps its tables, and the variables that say so."""
    if request.param == "sqlite":
        return chorus_home / "state.db", {}
    url: str = request.getfixturevalue("postgres_url")
    return url, {"DATABASE_URL": url}


def _dump(where: Location) -> str:
    """Every row of every table, as text."""
    if isinstance(where, Path):
        with sqlite3.connect(where) as conn:
            return "\n".join(conn.iterdump())
    import psycopg

    with psycopg.connect(str(where)) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        ]
        return "\n".join(
            str(row) for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')
        )


def _files_text(home: Path) -> str:
    """What every file under CHORUS_HOME holds, but the SQLite database itself."""
    return "\n".join(
        path.read_text(errors="replace")
        for path in home.rglob("*")
        if path.is_file() and not path.name.startswith("state.db")
    )


async def _say(tg: FakeTelegram, text: str, count: int, user: int = ANN) -> str:
    """Send ``text`` in ``user``'s private chat; the bot's answer (the ``count``th message)."""
    tg.message(text, user_id=user)
    return (await tg.wait_messages(user, count))[count - 1].text


async def test_the_value_is_stored_sealed_and_reaches_nothing_else(
    make_gateway: GatewayFactory,
    backend: tuple[Location, dict[str, str]],
    chorus_home: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    where, env = backend
    gw = await make_gateway(CHORUS_SECRET_KEY=KEY, **env)
    tg, llm = gw.telegram, gw.server
    llm.reply("Hello Ann!")
    await _say(tg, "hi", 1)

    asked = await _say(tg, "/secret set GITHUB_TOKEN", 2)
    assert "next message" in asked and "GITHUB_TOKEN" in asked
    update = tg.message(VALUE, user_id=ANN)
    saved = (await tg.wait_messages(ANN, 3))[2].text
    assert saved == "Saved GITHUB_TOKEN. I deleted your message with it."
    assert (ANN, update["message"]["message_id"]) in tg.deleted

    llm.reply("You sent a secret, I did not see it.")
    await _say(tg, "what did I just send?", 4)
    await gw.settle()
    assert len(llm.requests) == 2
    assert VALUE not in json.dumps(llm.requests)
    assert gw.stack.secrets is not None
    assert gw.stack.secrets.get(ANN_KEY, "GITHUB_TOKEN") == VALUE
    assert gw.stack.db.db.search(ANN_KEY, VALUE) == []
    assert gw.stack.db.db.search(ANN_KEY, "just send")  # the search does find what was said

    listed = await _say(tg, "/secret list", 5)
    assert "GITHUB_TOKEN" in listed and VALUE not in listed
    await gw.close()

    dump = _dump(where)
    assert "GITHUB_TOKEN" in dump  # the row is there, sealed
    assert VALUE not in dump and "Zq8sVt31" not in dump
    assert VALUE not in _files_text(chorus_home)
    assert VALUE not in caplog.text
    assert all(VALUE not in str(r.args) for r in caplog.records)
    with SecretStore(where, SecretKey(KEY)) as store:  # and it opens after a restart
        assert store.get(ANN_KEY, "GITHUB_TOKEN") == VALUE


async def test_delete_list_and_cancel(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_SECRET_KEY=KEY)
    tg, llm = gw.telegram, gw.server
    assert await _say(tg, "/secret list", 1) == "You have no secrets stored."
    await _say(tg, "/secret set API_KEY", 2)
    await _say(tg, "value-one-123456", 3)
    assert "API_KEY" in await _say(tg, "/secret list", 4)
    assert await _say(tg, "/secret delete API_KEY", 5) == "Deleted API_KEY."
    assert await _say(tg, "/secret delete API_KEY", 6) == "You have no secret named API_KEY."
    assert await _say(tg, "/secret list", 7) == "You have no secrets stored."

    await _say(tg, "/secret set OTHER_TOKEN", 8)
    assert "OTHER_TOKEN" in await _say(tg, "/cancel", 9)
    llm.reply("An ordinary answer.")
    assert await _say(tg, "just chatting", 10) == "An ordinary answer."
    assert "just chatting" in json.dumps(llm.requests)
    assert await _say(tg, "/secret cancel", 11) == "No /secret set is waiting for a value."
    assert "not a secret name" in await _say(tg, "/secret set github_token", 12)


async def test_refused_in_a_group_and_nothing_waits(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_SECRET_KEY=KEY)
    tg, llm = gw.telegram, gw.server
    llm.reply("Hi.")
    await _say(tg, "hello", 1)  # Ann has a private chat with the bot
    tg.message("/secret set GITHUB_TOKEN", user_id=ANN, chat_id=GROUP)
    refusal = (await tg.wait_messages(ANN, 2))[1].text  # told privately, not in the group
    assert "only in a direct message" in refusal and "nothing was" in refusal
    assert gw.stack.secrets is not None
    assert gw.stack.secrets.waiting(ANN_KEY, now=0.0) is None
    llm.reply("Not a secret.")
    assert await _say(tg, "ghp_notasecret", 3) == "Not a secret."
    assert gw.stack.secrets.names(ANN_KEY) == []


async def test_a_value_typed_after_the_name_is_dropped(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_SECRET_KEY=KEY)
    tg = gw.telegram
    update = tg.message(f"/secret set GITHUB_TOKEN {VALUE}", user_id=ANN)
    [reply] = await tg.wait_messages(ANN, 1)
    assert "nothing was stored" in reply.text and VALUE not in reply.text
    assert (ANN, update["message"]["message_id"]) in tg.deleted
    await gw.close()
    assert VALUE not in _dump(gw.stack.settings.home / "state.db")


async def test_without_a_key_nothing_is_stored(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    refusal = await _say(tg, "/secret set GITHUB_TOKEN", 1)
    assert "CHORUS_SECRET_KEY" in refusal and "Nothing was stored" in refusal
    assert "CHORUS_SECRET_KEY is not set" in caplog.text  # and the operator is told
    llm.reply("Ordinary.")
    assert await _say(tg, "an ordinary message", 2) == "Ordinary."


async def test_the_request_outlives_a_restart(make_gateway: GatewayFactory) -> None:
    first = await make_gateway(CHORUS_SECRET_KEY=KEY)
    await _say(first.telegram, "/secret set GITHUB_TOKEN", 1)
    await first.close()
    second = await make_gateway(CHORUS_SECRET_KEY=KEY)
    saved = await _say(second.telegram, VALUE, 2)
    assert saved.startswith("Saved GITHUB_TOKEN.")
    assert second.server.requests == []
    assert second.stack.secrets is not None
    assert second.stack.secrets.get(ANN_KEY, "GITHUB_TOKEN") == VALUE


async def test_a_message_that_cannot_be_deleted_is_said_so(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_SECRET_KEY=KEY)
    tg = gw.telegram
    tg.refuse_deletes = True
    await _say(tg, "/secret set GITHUB_TOKEN", 1, user=BOB)
    saved = await _say(tg, VALUE, 2, user=BOB)
    assert saved == (
        "Saved GITHUB_TOKEN. I could not delete your message with it: delete it yourself."
    )
    assert gw.server.requests == []

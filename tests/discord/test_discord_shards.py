"""Sharding: ``discord.shards`` runs every shard in one process, ``discord.shard_ids``
a subset (several processes split one bot); readiness covers every shard run here."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.errors import ConfigError
from tests.discord.conftest import ANN, DM_ANN, GatewayFactory
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID

SECOND_GUILD = 910_000_000_004_194_305
"""A guild Discord routes to shard 1 of 2 ((id >> 22) % 2 == 1); GUILD_ID is on shard 0."""
SECOND_CHANNEL = SECOND_GUILD + 1


def mention(text: str) -> str:
    return f"<@{BOT_ID}> {text}"


async def test_two_shards_in_one_process_each_with_its_guilds(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_DISCORD__SHARDS="2")
    fake, llm = gw.discord, gw.server
    assert fake.shard_of({"guild_id": str(SECOND_GUILD)}) == 1
    assert fake.shard_of({"guild_id": str(GUILD_ID)}) == 0
    await fake.wait_for(lambda: fake.connected_shards() == [0, 1], what="both shards")
    assert sorted(fake.identified) == [(0, 2), (1, 2)]

    llm.reply("from shard one")
    fake.message(
        mention("hello"),
        author=ANN,
        channel_id=SECOND_CHANNEL,
        guild_id=SECOND_GUILD,
        mentions_bot=True,
    )
    assert [p.content for p in await fake.wait_posted(SECOND_CHANNEL, 1)] == ["from shard one"]
    llm.reply("from shard zero")
    fake.message(
        mention("hello"), author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, mentions_bot=True
    )
    assert [p.content for p in await fake.wait_posted(CHANNEL_ID, 1)] == ["from shard zero"]
    llm.reply("a direct answer")
    fake.message("hi", author=ANN, channel_id=DM_ANN)
    assert [p.content for p in await fake.wait_posted(DM_ANN, 1)] == ["a direct answer"]


async def test_readiness_fails_while_any_shard_is_down(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_DISCORD__SHARDS="2")
    fake, adapter = gw.discord, gw.adapter
    await fake.wait_for(lambda: fake.connected_shards() == [0, 1], what="both shards")
    assert adapter.is_connected()
    fake.hold()
    fake.drop(1)  # shard 0 stays up
    await fake.wait_for(lambda: not adapter.is_connected(), what="readiness to fail")
    assert fake.connected_shards() == [0]
    fake.release()
    await fake.wait_for(adapter.is_connected, timeout=20, what="shard 1 back")
    assert fake.connected_shards() == [0, 1]


async def test_shard_ids_take_a_subset_so_processes_can_split_one_bot(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_DISCORD__SHARDS="2", CHORUS_DISCORD__SHARD_IDS="[1]")
    fake, llm = gw.discord, gw.server
    assert fake.identified == [(1, 2)]
    assert gw.adapter.is_connected()
    fake.message("hi", author=ANN, channel_id=DM_ANN)  # shard 0's: another process answers it
    llm.reply("shard one here")
    fake.message(
        mention("who answers?"),
        author=ANN,
        channel_id=SECOND_CHANNEL,
        guild_id=SECOND_GUILD,
        mentions_bot=True,
    )
    assert [p.content for p in await fake.wait_posted(SECOND_CHANNEL, 1)] == ["shard one here"]
    await gw.settle()
    assert fake.posted_in(DM_ANN) == []
    assert len(llm.requests) == 1


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CHORUS_DISCORD__SHARD_IDS": "[0]"}, "discord.shards"),
        ({"CHORUS_DISCORD__SHARDS": "2", "CHORUS_DISCORD__SHARD_IDS": "[2]"}, "[2]"),
        ({"CHORUS_DISCORD__SHARDS": "0"}, "shards"),
    ],
)
def test_shard_settings_that_cannot_work_are_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], named: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    assert named in str(caught.value)

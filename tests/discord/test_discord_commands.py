"""Application commands: registered at start-up, answered ephemerally through the
interaction routes, through the one dispatch and audit path; typed "/…" in a server
channel that does not address the bot is not for chorus."""

from __future__ import annotations

from gateway.commands._admin import ADMIN_SUBCOMMANDS
from tests.discord.conftest import (
    ADMIN,
    ADMIN_ID,
    ANN,
    ANN_ID,
    DM_ANN,
    STRANGER,
    STRANGER_ID,
    GatewayFactory,
)
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_data import CHANNEL_ID, GUILD_ID, THREAD_ID
from tests.fakes.discord_interactions import FakeInteraction

EXPECTED = {"new", "status", "memory", "forget", "undo", "retry", "stop", "whoami", "help", "admin"}


async def run(fake: FakeDiscord, record: FakeInteraction) -> FakeInteraction:
    """The interaction, once Discord shows its caller an answer."""
    await fake.wait_answered(record)
    return record


async def test_every_command_is_registered_with_its_subcommands_or_an_args_option(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    registered = {c["name"]: c for c in fake.commands[None] if c["type"] == 1}  # slash ones
    assert set(registered) >= EXPECTED
    admin = registered["admin"]["options"]
    assert {o["type"] for o in admin} == {1}  # SUB_COMMAND, one per admin subcommand
    assert [o["name"] for o in admin] == [sub.name for sub in ADMIN_SUBCOMMANDS]
    assert [o["name"] for o in registered["forget"]["options"]] == ["args"]
    assert registered["whoami"].get("options", []) == []
    assert registered["new"].get("options", []) == []
    # admin commands are hidden from members without Manage Server; others are for everyone
    assert int(registered["admin"]["default_member_permissions"]) == 32  # Manage Server
    assert registered["whoami"].get("default_member_permissions") is None
    assert all(1 <= len(c["description"]) <= 100 for c in registered.values())
    puts = fake.calls_of("PUT", "/commands")
    assert len(puts) == 1 and puts[0].path.startswith("/applications/")


async def test_command_guilds_register_in_each_guild_instead_of_globally(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_DISCORD__COMMAND_GUILDS=f"[{GUILD_ID}]")
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names(GUILD_ID)), what="the guild sync")
    assert set(fake.command_names(GUILD_ID)) >= EXPECTED
    assert None not in fake.commands  # nothing global


async def test_whoami_is_an_ephemeral_interaction_response(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    record = await run(fake, fake.interaction("whoami", user=ANN, channel_id=DM_ANN))
    assert record.callbacks[0]["type"] == 4  # answered at once, not deferred
    assert record.ephemeral
    assert f"discord:{ANN_ID}" in record.text
    assert fake.posted == []  # nothing in any channel


async def test_admin_sessions_for_the_admin_refused_and_audited_for_others(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    llm.reply("hello")
    fake.message("hi", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    await gw.settle()

    ok = await run(
        fake,
        fake.interaction(
            "admin", user=ADMIN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, sub="sessions"
        ),
    )
    assert ok.ephemeral
    assert "open session" in ok.text and f"discord:{ANN_ID}" in ok.text
    refused = await run(
        fake,
        fake.interaction(
            "admin", user=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, sub="sessions"
        ),
    )
    assert refused.ephemeral
    assert "admins only" in refused.text and "open session" not in refused.text
    stranger = await run(
        fake,
        fake.interaction("admin", user=STRANGER, channel_id=DM_ANN, sub="users"),
    )
    assert f"discord:{STRANGER_ID}" in stranger.text and "open session" not in stranger.text

    audit = [(e.actor, e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert (f"discord:{ADMIN_ID}", "sessions", "ok") in audit
    assert (f"discord:{ANN_ID}", "sessions", "refused") in audit
    assert (f"discord:{STRANGER_ID}", "users", "refused:not_allowed") in audit
    assert [p.content for p in fake.posted] == ["hello"]  # the DM answer, nothing else


async def test_a_slow_answer_is_deferred_then_the_original_response_is_edited(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(defer_after=0.0)  # every answer counts as slow
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    record = await run(
        fake, fake.interaction("status", user=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    )
    assert [c["type"] for c in record.callbacks] == [5]  # deferred: "chorus is thinking…"
    assert int(record.callbacks[0]["data"]["flags"]) & 64  # the deferral is ephemeral
    assert len(record.edits) == 1 and f"discord:{ANN_ID}" in record.text
    assert fake.posted == []


async def test_a_long_answer_goes_on_in_ephemeral_followups(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    for n in range(40):  # forty users make /admin users longer than one Discord message
        key = f"discord:{700_000_000_000_000_000 + n}"
        gw.stack.gateway_db.set_access(key, "allowed", f"discord:{ADMIN_ID}", 0.0)
    record = await run(fake, fake.interaction("admin", user=ADMIN, channel_id=DM_ANN, sub="users"))
    await fake.wait_for(lambda: bool(record.followups), what="a follow-up")
    assert record.ephemeral
    assert all(len(c["data"]["content"]) <= 2000 for c in record.callbacks)
    assert "discord:700000000000000039" in record.text


async def test_unaddressed_slash_text_in_a_server_channel_is_not_for_chorus(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.message("/tmp is full", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID)
    fake.message("/new", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID)
    fake.message("/whoami", author=ADMIN, channel_id=CHANNEL_ID, guild_id=GUILD_ID)
    llm.reply("still here")
    fake.message(
        "<@900000000000000001> what now?",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    posted = await fake.wait_posted(CHANNEL_ID, 1)
    await gw.settle()
    assert [p.content for p in posted] == ["still here"]  # no "Unknown command /tmp"
    # in a DM, a typed command works as before
    fake.message("/whoami", author=ANN, channel_id=DM_ANN)
    dm = await fake.wait_posted(DM_ANN, 1)
    assert f"discord:{ANN_ID}" in dm[0].content


async def test_admin_subcommands_carry_their_options_and_choices(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    [admin] = [c for c in fake.commands[None] if c["name"] == "admin"]
    subs = {o["name"]: o for o in admin["options"]}
    assert subs["sessions"].get("options", []) == []
    [target] = subs["end"]["options"]
    assert (target["name"], target["type"], target["required"]) == ("target", 3, True)
    budget = subs["budget"]["options"]
    assert [o["name"] for o in budget] == ["person", "limit", "value"]
    limits = [c["value"] for c in budget[1]["choices"]]
    assert limits == ["tokens_per_day", "cost_per_month", "reset"]
    assert budget[2].get("required", False) is False
    queue = subs["queue"]["options"]
    assert [c["value"] for c in queue[0]["choices"]] == ["retry-failed"]
    memory = {o["name"]: o for o in subs["memory"]["options"]}
    assert "approve" in [c["value"] for c in memory["action"]["choices"]]
    assert all(1 <= len(o["description"]) <= 100 for o in admin["options"])


async def test_an_admin_subcommand_with_options_runs_the_typed_command(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    newcomer = f"discord:{STRANGER_ID}"
    allowed = await run(
        fake,
        fake.interaction(
            "admin", user=ADMIN, channel_id=DM_ANN, sub="allow", values={"person": newcomer}
        ),
    )
    assert newcomer in allowed.text and allowed.ephemeral
    record = gw.stack.gateway_db.get_access(newcomer)
    assert record is not None and record.state == "allowed"
    budget = await run(
        fake,
        fake.interaction(
            "admin",
            user=ADMIN,
            channel_id=DM_ANN,
            sub="budget",
            values={"person": newcomer, "limit": "tokens_per_day", "value": "5000"},
        ),
    )
    assert "5,000 tokens a day" in budget.text
    requeued = await run(
        fake,
        fake.interaction(
            "admin", user=ADMIN, channel_id=DM_ANN, sub="queue", values={"action": "retry-failed"}
        ),
    )
    assert "Requeued 0 failed job(s)." in requeued.text
    audit = [(e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert (f"allow {newcomer}", "ok") in audit
    assert any(a.startswith(f"budget {newcomer} tokens_per_day=5000") for a, _ in audit)
    assert ("queue retry-failed", "ok") in audit

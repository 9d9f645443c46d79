"""``discord.follow_threads``: after the bot answers in a thread, later messages there
reach it without a mention (and after a restart, from the thread's history)."""

from __future__ import annotations

from tests.discord.conftest import ANN, BOB, GatewayFactory
from tests.fakes.discord_data import BOT_ID, BOT_USER, CHANNEL_ID, GUILD_ID, THREAD_ID


def _asked(requests: list[dict[str, object]]) -> list[str]:
    """The last user message of each LLM request."""
    found: list[str] = []
    for request in requests:
        messages = request["messages"]
        assert isinstance(messages, list)
        found.append([m["content"] for m in messages if m["role"] == "user"][-1])
    return found


async def test_after_answering_in_a_thread_the_bot_follows_it(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.message("before the bot", author=BOB, channel_id=THREAD_ID, guild_id=GUILD_ID)
    llm.reply("First answer.")
    fake.message(
        f"<@{BOT_ID}> what is this?",
        author=ANN,
        channel_id=THREAD_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    await fake.wait_posted(THREAD_ID, 1)
    await gw.settle()
    llm.reply("Second answer.")
    fake.message("and why?", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    posted = await fake.wait_posted(THREAD_ID, 2)
    await gw.settle()
    assert [p.content for p in posted] == ["First answer.", "Second answer."]
    assert len(llm.requests) == 2  # Bob's message before the bot answered was not for it
    assert _asked(llm.requests)[-1].endswith("and why?")
    # the channel the thread is in is not followed
    fake.message("in the channel", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID)
    await gw.settle()
    assert len(llm.requests) == 2 and not fake.posted_in(CHANNEL_ID)


async def test_a_thread_the_bot_wrote_in_before_a_restart_is_followed(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.said_earlier("Answered before the restart.", author=BOT_USER, channel_id=THREAD_ID)
    llm.reply("Still following.")
    fake.message("one more thing", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    [posted] = await fake.wait_posted(THREAD_ID, 1)
    assert posted.content == "Still following."
    # the bot's earlier words came as the thread's context
    assert "Answered before the restart." in str(llm.requests[0]["messages"])


async def test_follow_threads_off_needs_a_mention_each_time(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_DISCORD__FOLLOW_THREADS="false")
    fake, llm = gw.discord, gw.server
    llm.reply("First answer.")
    fake.message(f"<@{BOT_ID}> hello", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    await fake.wait_posted(THREAD_ID, 1)
    await gw.settle()
    fake.message("and why?", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    await gw.settle()
    llm.reply("Asked again.")
    fake.message(f"<@{BOT_ID}> again", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    posted = await fake.wait_posted(THREAD_ID, 2)
    await gw.settle()
    assert [p.content for p in posted] == ["First answer.", "Asked again."]
    assert len(llm.requests) == 2

"""Guild channels and threads: gating, replies that reference, long answers in parts."""

from __future__ import annotations

from tests.discord.conftest import ANN, BOB, GatewayFactory
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID, THREAD_ID


async def test_guild_channel_answers_only_when_addressed(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.message("just chatting", author=BOB, channel_id=CHANNEL_ID, guild_id=GUILD_ID)
    llm.reply("Hi Ann.")
    asked = fake.message(
        f"<@{BOT_ID}> hello bot",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    [answer] = await fake.wait_posted(CHANNEL_ID, 1)
    await gw.settle()
    assert answer.content == "Hi Ann." and answer.reference == int(asked["id"])
    assert len(llm.requests) == 1
    users = [m["content"] for m in llm.requests[0]["messages"] if m["role"] == "user"]
    assert users[-1] == "hello bot"

    reply = {**asked, "id": str(answer.id), "author": fake_bot_author(), "content": answer.content}
    llm.reply("Still here.")
    fake.message("and you?", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, referenced=reply)
    second = (await fake.wait_posted(CHANNEL_ID, 2))[1]
    assert second.content == "Still here."


async def test_thread_messages_are_answered_in_the_thread(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    llm.reply("In the thread.")
    fake.message(
        f"<@!{BOT_ID}> here?",
        author=ANN,
        channel_id=THREAD_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    [answer] = await fake.wait_posted(THREAD_ID, 1)
    assert answer.content == "In the thread."
    assert not fake.posted_in(CHANNEL_ID)


async def test_long_answer_arrives_in_ordered_parts(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    paragraphs = [f"Paragraph {n}: " + "word " * 120 for n in range(12)]
    answer = "\n\n".join(p.strip() for p in paragraphs)
    assert len(answer) > 5000
    llm.reply(answer)
    fake.message(f"<@{BOT_ID}> essay", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID)
    await fake.wait_for(
        lambda: "".join(p.content for p in fake.posted_in(CHANNEL_ID)).count("Paragraph") == 12,
        what="every part",
    )
    await gw.settle()
    parts = fake.posted_in(CHANNEL_ID)
    assert len(parts) >= 3 and all(len(p.content) <= 2000 for p in parts)
    text = "\n\n".join(p.content for p in parts)
    assert [text.index(f"Paragraph {n}:") for n in range(12)] == sorted(
        text.index(f"Paragraph {n}:") for n in range(12)
    )
    assert parts[0].reference is not None and all(p.reference is None for p in parts[1:])


def fake_bot_author() -> dict[str, object]:
    from tests.fakes.discord_data import BOT_USER

    return BOT_USER

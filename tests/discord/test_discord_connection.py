"""Network loss, RESUME and replayed events, rate limits: nothing lost, nothing twice."""

from __future__ import annotations

from tests.discord.conftest import ANN, DM_ANN, GatewayFactory


async def test_reconnects_after_a_network_loss_and_answers_missed_messages_once(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm, adapter = gw.discord, gw.server, gw.adapter
    llm.reply("first answer")
    fake.message("before the loss", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    await gw.settle()

    fake.hold()
    fake.drop()
    await fake.wait_for(lambda: not adapter.is_connected(), what="the loss to be noticed")
    llm.reply("second answer")
    fake.message("while offline", author=ANN, channel_id=DM_ANN)
    fake.replay_everything = True  # the first message comes again with the missed one
    fake.release()
    await fake.wait_for(adapter.is_connected, timeout=20, what="a reconnect")
    assert fake.resumes == 1 and fake.identifies == 1

    llm.reply("third answer")
    fake.message("after the loss", author=ANN, channel_id=DM_ANN)
    posted = await fake.wait_posted(DM_ANN, 3)
    await gw.settle()
    assert [p.content for p in fake.posted_in(DM_ANN)] == [
        "first answer",
        "second answer",
        "third answer",
    ]
    assert len(llm.requests) == 3
    assert posted


async def test_a_rate_limited_send_is_delivered_once(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.rate_limit(2, retry_after=0.1)
    llm.reply("patience pays")
    fake.message("hello", author=ANN, channel_id=DM_ANN)
    [answer] = await fake.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert answer.content == "patience pays"
    assert len(fake.calls_of("POST", f"/channels/{DM_ANN}/messages", status=429)) == 2
    assert len(fake.posted_in(DM_ANN)) == 1

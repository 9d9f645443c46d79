"""``/retry`` in a group: the answer is asked for again and posted as a reply to the
``/retry`` message (whose inbound id chorus marks ``"<id>:retry"``)."""

from __future__ import annotations

from pathlib import Path

from tests.telegram.conftest import ANN, GROUP, GatewayFactory


async def test_retry_in_a_group_is_answered_as_a_reply_to_it(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    llm.reply("The first answer.")
    tg.message("@chorus_test_bot tell me a fact", user_id=ANN, chat_id=GROUP)
    await tg.wait_messages(GROUP, 1)
    await gw.settle()

    llm.reply("The second answer.")
    retry = tg.message("/retry", user_id=ANN, chat_id=GROUP)
    await tg.wait_for(
        lambda: any(m.text == "The second answer." for m in tg.in_chat(GROUP)),
        what="the retried answer",
    )
    [again] = [m for m in tg.in_chat(GROUP) if m.text == "The second answer."]
    assert again.reply_to == retry["message"]["message_id"]
    assert not [m for m in tg.in_chat(GROUP) if "sorry" in m.text.lower()]

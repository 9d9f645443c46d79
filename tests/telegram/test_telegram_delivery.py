"""Long answers, formatting fallback and flood control, against the fake Bot API."""

from __future__ import annotations

import re

from tests.fakes import JumpClock
from tests.fakes.telegram_api import BotMessage, Call
from tests.fakes.telegram_data import utf16_len
from tests.telegram.conftest import ANN, BOB, GROUP, GatewayFactory


def long_answer() -> str:
    intro = "\n\n".join(f"Paragraph {n}: " + "some plain words here " * 10 for n in range(8))
    code_a = "\n".join(f'print("line {n:03d}")  # a fairly long comment on it' for n in range(120))
    middle = "\n\n".join(f"More **text** {n}: " + "and so on " * 25 for n in range(6))
    code_b = "\n".join(f"echo step {n:03d}" for n in range(80))
    text = f"{intro}\n\n```python\n{code_a}\n```\n\n{middle}\n\n```bash\n{code_b}\n```\n\nThe end."
    assert len(text) >= 10_000
    return text


def _code_ranges(message: BotMessage) -> list[tuple[int, int]]:
    return [
        (e["offset"], e["offset"] + e["length"]) for e in message.entities if e["type"] == "pre"
    ]


async def test_a_long_answer_with_code_arrives_as_valid_ordered_parts(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    answer = long_answer()
    gw.server.reply(answer)
    asked = tg.message("@chorus_test_bot write a lot", user_id=ANN, chat_id=GROUP)
    await tg.wait_for(
        lambda: any("The end." in m.text for m in tg.in_chat(GROUP)), what="the last part"
    )
    parts = tg.in_chat(GROUP)
    assert len(parts) >= 3
    assert parts[0].reply_to == asked["message"]["message_id"]
    assert all(p.reply_to is None for p in parts[1:])
    for part in parts:
        assert utf16_len(part.text) <= 4096
        assert "```" not in part.text  # every part's code blocks were closed and converted
    joined = "\n".join(p.text for p in parts)
    lines = re.findall(r'line (\d{3})"|step (\d{3})|Paragraph (\d)|More text (\d)', joined)
    expected = (
        [("", "", str(n), "") for n in range(8)]
        + [(f"{n:03d}", "", "", "") for n in range(120)]
        + [("", "", "", str(n)) for n in range(6)]
        + [("", f"{n:03d}", "", "") for n in range(80)]
    )
    assert lines == expected  # everything, once, in order
    code_parts = 0
    for part in parts:
        ranges = _code_ranges(part)
        for match in re.finditer(r'print\("line \d{3}"\)|echo step \d{3}', part.text):
            start = utf16_len(part.text[: match.start()])
            assert any(a <= start < b for a, b in ranges), "code outside a code block"
        code_parts += bool(ranges)
    assert code_parts >= 2  # the first block was cut, closed and reopened


async def test_rejected_formatting_is_resent_as_plain_text(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.reject_formatting(1)
    gw.server.reply("Some **bold** and `code`.")
    tg.message("format something", user_id=ANN)
    [message] = await tg.wait_messages(ANN, 1)
    assert message.text == "Some **bold** and `code`."
    assert message.entities == []
    assert len(tg.calls_of("sendMessage", status=400)) == 1

    gw.server.reply("Now **bold** again.")
    tg.message("again", user_id=ANN)
    messages = await tg.wait_messages(ANN, 2)
    assert messages[1].text == "Now bold again."
    assert messages[1].entities == [{"type": "bold", "offset": 4, "length": 4}]


def _assert_retry_after_honoured(calls: list[Call], seconds: float) -> None:
    """In the adapter's own (virtual) time, nothing went out sooner than Telegram asked."""
    sends = [c for c in calls if c.method in ("sendMessage", "editMessageText")]
    refusals = [i for i, c in enumerate(sends) if c.status == 429]
    assert refusals
    for index in refusals:
        after = sends[index + 1 :]
        assert after, "nothing was sent after a 429"
        assert after[0].at - sends[index].at >= seconds


async def test_a_429_storm_delivers_every_message_once_in_order(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(clock=JumpClock())
    tg = gw.telegram
    answer = "\n\n".join(f"Part {n}: " + "z" * 3000 for n in range(4))
    gw.server.reply(answer)
    tg.flood(5, retry_after=1, methods=("sendMessage", "editMessageText", "sendChatAction"))
    tg.message("a long one, please", user_id=ANN)
    await tg.wait_for(lambda: len(tg.in_chat(ANN)) >= 4, timeout=30, what="all parts")
    await gw.settle()
    texts = [m.text for m in tg.in_chat(ANN)]
    assert texts == answer.split("\n\n")  # each part once, in order
    assert len([c for c in tg.calls if c.status == 429]) == 5
    _assert_retry_after_honoured(tg.calls, 1.0)


async def test_all_send_paths_in_a_group_share_one_budget(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(clock=JumpClock())
    tg, llm = gw.telegram, gw.server
    answers = {
        "Ann": "\n\n".join(f"Ann part {n}: " + "x" * 3000 for n in range(2)),
        "Bob": "\n\n".join(f"Bob part {n}: " + "y" * 3000 for n in range(2)),
    }
    llm.responder(lambda request: answers["Ann" if "Ann" in str(request) else "Bob"])
    tg.flood(2, retry_after=1)
    tg.message("@chorus_test_bot I am Ann, talk", user_id=ANN, chat_id=GROUP)
    tg.message("@chorus_test_bot and Bob, talk too", user_id=BOB, chat_id=GROUP)
    await tg.wait_for(lambda: len(tg.in_chat(GROUP)) >= 4, timeout=30, what="all parts")
    await gw.settle()
    texts = [m.text for m in tg.in_chat(GROUP)]
    assert len(texts) == len(set(texts)) == 4
    for who in ("Ann", "Bob"):
        assert [t for t in texts if t.startswith(who)] == answers[who].split("\n\n")
    _assert_retry_after_honoured(tg.calls, 1.0)

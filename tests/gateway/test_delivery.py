"""Splitting and streaming replies, through the in-memory adapter and a hand-moved clock."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from collections.abc import Callable

import pytest

from gateway.adapters import (
    WITHDRAWN_TEXT,
    AdapterCapabilities,
    MessageNotFound,
    PlatformUnreachable,
    ReplyStream,
    TestChatAdapter,
    send_text,
    split_text,
    utf16_length,
)
from gateway.adapters._text_split import split_spans
from gateway.events import OutboundMessage, SentMessage
from tests.fakes.clock import FakeClock

FENCE_LINE = re.compile(r"^ {0,3}```")


def assert_reassembles(text: str, parts: list[str]) -> None:
    """The parts are the text in order; only whitespace at the cuts is missing."""
    pos = 0
    for part in parts:
        assert part.strip(), "a part is blank"
        while pos < len(text) and text[pos].isspace():
            pos += 1
        body = part.strip()
        assert text.startswith(body, pos), f"part does not continue the text at {pos}"
        pos += len(body)
    assert not text[pos:].strip(), "text is missing at the end"


def skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def strip_added_fences(text: str, parts: list[str]) -> list[str]:
    """Check the parts are balanced and are the text in order; remove the fences cuts added.

    A part may end a code block early when only blank lines were left in it.
    """
    stripped: list[str] = []
    continuing = False
    pos = 0
    for part in parts:
        lines = part.split("\n")
        fences = [i for i, line in enumerate(lines) if FENCE_LINE.match(line)]
        assert len(fences) % 2 == 0, f"unbalanced fences in a part: {part[:80]!r}"
        assert all(lines[i].strip() == "```python" for i in fences[::2])
        if continuing:
            assert lines[0] == "```python"
            lines = lines[1:]
        pos = skip_space(text, pos)
        continuing = False
        if lines[-1] == "```":
            code = "\n".join(lines[:-1]).strip()
            assert text.startswith(code, pos), f"part does not continue the text at {pos}"
            after = skip_space(text, pos + len(code))
            if text.startswith("```", after):
                pos = after + 3
            else:
                continuing = True
                lines = lines[:-1]
                pos += len(code)
        else:
            body = "\n".join(lines).strip()
            assert text.startswith(body, pos), f"part does not continue the text at {pos}"
            pos += len(body)
        stripped.append("\n".join(lines))
    assert not text[pos:].strip(), "text is missing at the end"
    return stripped


def random_text(rng: random.Random, size: int) -> str:
    words = ["a", "to", "the", "gateway", "édition", "日本語", "😀", "x" * 60, "indent"]
    pieces: list[str] = []
    while sum(map(len, pieces)) < size:
        roll = rng.random()
        if roll < 0.05:
            pieces.append("\n\n")
        elif roll < 0.12:
            pieces.append("\n" + " " * rng.choice([0, 0, 2, 4]))
        elif roll < 0.14:
            pieces.append("y" * rng.randint(100, 400))
        else:
            pieces.append(rng.choice(words) + rng.choice([" ", " ", " ", "  ", "\t"]))
    return "".join(pieces)


# --- split_text ------------------------------------------------------------------------


def test_short_text_is_one_part_and_blank_text_none() -> None:
    assert split_text("Hello there", 4096) == ["Hello there"]
    assert split_text("", 10) == []
    assert split_text(" \n\n\t ", 10) == []


def test_paragraphs_are_preferred_over_lines_over_words() -> None:
    text = "alpha beta\n\ngamma delta\nepsilon zeta eta theta"
    assert split_text(text, 30) == ["alpha beta", "gamma delta", "epsilon zeta eta theta"]
    assert split_text("one two three four five", 10) == ["one two", "three four", "five"]


def test_a_single_long_word_is_hard_cut() -> None:
    word = "w" * 5000
    parts = split_text(word, 4096)
    assert parts == ["w" * 4096, "w" * 904]


@pytest.mark.parametrize("seed", range(40))
def test_random_texts_fit_and_reassemble(seed: int) -> None:
    rng = random.Random(seed)
    text = random_text(rng, rng.randint(50, 3000))
    for limit in (7, 40, 137, 1000):
        for length in (len, utf16_length):
            parts = split_text(text, limit, length=length)
            assert all(length(part) <= limit for part in parts)
            assert_reassembles(text, parts)


def test_indentation_after_a_line_cut_is_kept() -> None:
    text = "- first item here\n  - nested item\n  - another nested"
    parts = split_text(text, 20)
    assert parts[1].startswith("  - nested")


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_length("abc") == 3
    assert utf16_length("a😀") == 3
    assert utf16_length("é日") == 2
    text = "😀" * 10
    parts = split_text(text, 5, length=utf16_length)
    assert parts == ["😀😀"] * 5
    assert split_text(text, 5) == ["😀" * 5] * 2


def code_document() -> str:
    rng = random.Random(7)
    blocks: list[str] = []
    index = 0
    while sum(map(len, blocks)) < 10_000:
        sentences = " ".join(
            f"Sentence {rng.randint(1, 999)} explains step {index}." for _ in range(6)
        )
        blocks.append(sentences)
        code = [f"def step_{index}(value: int) -> int:"]
        for line in range(rng.randint(10, 60)):
            code.append(f"    value = value * {line} + {index}  # line {line}")
            if line % 9 == 8:
                code.append("")
        code.append("    return value")
        blocks.append("```python\n" + "\n".join(code) + "\n```")
        index += 1
    return "\n\n".join(blocks)


def test_code_blocks_are_closed_and_reopened_at_cuts() -> None:
    text = code_document()
    assert len(text) >= 10_000
    parts = split_text(text, 1000)
    assert all(len(part) <= 1000 for part in parts)
    stripped = strip_added_fences(text, parts)
    assert stripped != parts, "no cut fell inside a code block"
    original_lines = [line for line in text.split("\n") if line.strip()]
    rejoined = [line for part in stripped for line in part.split("\n") if line.strip()]
    assert rejoined == original_lines


def test_an_unclosed_code_block_still_gets_every_line() -> None:
    text = "Here:\n```python\n" + "\n".join(f"print({i})" for i in range(300))
    parts = split_text(text, 200)
    assert all(len(part) <= 200 for part in parts)
    assert all(part.startswith("```python") for part in parts[1:])
    code = [line for part in parts for line in part.split("\n") if line.startswith("print(")]
    assert code == [f"print({i})" for i in range(300)]


def test_splitting_again_from_a_part_gives_the_same_remaining_parts() -> None:
    text = code_document()
    parts = split_spans(text, 700)
    for index in (1, 2, len(parts) // 2):
        assert split_spans(text, 700, start=parts[index].start) == parts[index:]


# --- ReplyStream -----------------------------------------------------------------------


def caps(
    limit: int = 4000, *, edits: bool = True, interval: float = 1.0, paced: bool = False
) -> AdapterCapabilities:
    return AdapterCapabilities(
        max_text_length=limit, edits=edits, min_edit_interval=interval, paced=paced
    )


def make_stream(
    adapter: TestChatAdapter,
    clock: FakeClock,
    *,
    streaming: bool = True,
    length: Callable[[str], int] = len,
) -> ReplyStream:
    return ReplyStream(
        adapter,
        platform="testchat",
        chat_id="c1",
        thread_id=None,
        reply_to="m1",
        clock=clock,
        streaming=streaming,
        length=length,
    )


async def settle(clock: FakeClock, pending: asyncio.Future[list[SentMessage]]) -> list[SentMessage]:
    """Let time pass until ``pending`` is done (final edits wait out the edit interval)."""
    for _ in range(200):
        if pending.done():
            break
        await clock.advance(0.25)
    return pending.result()


async def push(stream: ReplyStream, delta: str) -> None:
    """Push ``delta`` and let the update it may start run (the budget is free here)."""
    await stream.push(delta)
    for _ in range(5):
        await asyncio.sleep(0)


def actions(adapter: TestChatAdapter) -> int:
    return len(adapter.sent) + sum(d.edits for d in adapter.sent)


async def assert_done_once_each(adapter: TestChatAdapter) -> None:
    popped = [await adapter.pop(timeout=1) for _ in adapter.sent]
    assert [d.message_id for d in popped] == [d.message_id for d in adapter.sent]
    with pytest.raises(TimeoutError):
        await adapter.pop(timeout=0.01)


async def test_streaming_edits_at_most_once_per_interval_and_lands_exactly() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps())
    stream = make_stream(adapter, clock)
    deltas = [f"word{i} " for i in range(50)]
    times: list[float] = []
    for delta in deltas:
        before = actions(adapter)
        await clock.advance(0.3)
        await push(stream, delta)
        times.extend([clock.time()] * (actions(adapter) - before))
    assert len(times) >= 10
    assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(times))
    assert len(adapter.sent) == 1
    sent = await settle(clock, asyncio.ensure_future(stream.finish("".join(deltas))))
    assert adapter.texts() == ["".join(deltas).rstrip()]
    assert [s.message_id for s in sent] == [d.message_id for d in adapter.sent]
    assert adapter.sent[0].reply_to == "m1"
    await assert_done_once_each(adapter)


async def test_a_long_answer_streams_into_several_ordered_messages() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(200))
    stream = make_stream(adapter, clock)
    deltas = [f"Sentence {i} is here. " + ("\n\n" if i % 5 == 4 else "") for i in range(60)]
    for delta in deltas:
        await clock.advance(0.4)
        await stream.push(delta)
    assert len(adapter.sent) > 1, "streaming did not continue in a new message"
    final = "".join(deltas)
    sent = await settle(clock, asyncio.ensure_future(stream.finish(final)))
    assert adapter.texts() == split_text(final, 200)
    assert all(len(text) <= 200 for d in adapter.sent for text in d.history)
    assert len(sent) == len(adapter.sent)
    assert [d.reply_to for d in adapter.sent] == ["m1"] + [None] * (len(adapter.sent) - 1)
    await assert_done_once_each(adapter)


async def test_streamed_code_blocks_stay_balanced_in_every_message() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(700, interval=0.0))
    stream = make_stream(adapter, clock)
    final = code_document()
    for start in range(0, len(final), 23):
        await stream.push(final[start : start + 23])
    await stream.finish(final)
    assert adapter.texts() == split_text(final, 700)
    assert all(len(text) <= 700 for d in adapter.sent for text in d.history)
    strip_added_fences(final, adapter.texts())


async def test_without_edits_nothing_is_sent_until_finish() -> None:
    clock = FakeClock()
    adapter = TestChatAdapter(capabilities=caps(100, edits=False, interval=0.0))
    stream = make_stream(adapter, clock)
    final = " ".join(f"token{i}" for i in range(80))
    for word in final.split(" "):
        await clock.advance(2.0)
        await stream.push(word + " ")
    assert adapter.sent == []
    sent = await stream.finish(final)
    assert adapter.texts() == split_text(final, 100)
    assert len(sent) == len(adapter.sent) > 1
    assert all(d.edits == 0 for d in adapter.sent)
    await assert_done_once_each(adapter)


async def test_streaming_off_sends_only_at_finish() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(interval=0.0))
    stream = make_stream(adapter, clock, streaming=False)
    await stream.push("Hello ")
    await stream.push("world")
    assert adapter.sent == []
    await stream.finish("Hello world")
    assert adapter.texts() == ["Hello world"]


async def test_a_different_final_text_replaces_the_streamed_one() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps())
    stream = make_stream(adapter, clock)
    for delta in ["The answer ", "is forty", "-two because"]:
        await clock.advance(1.1)
        await stream.push(delta)
    apology = "Sorry, something went wrong. Please try again."
    await settle(clock, asyncio.ensure_future(stream.finish(apology)))
    assert adapter.texts() == [apology]
    assert adapter.sent[0].history[-1] == apology
    await assert_done_once_each(adapter)


async def test_a_shorter_final_text_withdraws_extra_streamed_messages() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(50, interval=0.0))
    stream = make_stream(adapter, clock)
    for i in range(20):
        await push(stream, f"part {i} of it ")
    assert len(adapter.sent) >= 3
    await stream.finish("Sorry, that failed.")
    assert adapter.texts()[0] == "Sorry, that failed."
    assert set(adapter.texts()[1:]) == {WITHDRAWN_TEXT}
    await assert_done_once_each(adapter)


async def test_abort_appends_the_note_to_the_streamed_message() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(interval=0.0))
    stream = make_stream(adapter, clock)
    await push(stream, "Partial answer")
    await push(stream, " that was")
    await stream.abort("(stopped)")
    assert adapter.texts() == ["Partial answer that was\n\n(stopped)"]
    await assert_done_once_each(adapter)


async def test_abort_before_anything_was_shown_sends_the_note() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps())
    stream = make_stream(adapter, clock)
    await stream.push("not yet shown")
    await stream.abort("(stopped)")
    assert adapter.texts() == ["(stopped)"]


class BrokenEdits(TestChatAdapter):
    """A platform whose edit requests fail on the network."""

    async def edit(self, sent: SentMessage, text: str) -> None:
        try:
            raise ConnectionError("edit request failed")
        except ConnectionError as exc:
            raise PlatformUnreachable(self.name, "ConnectionError") from exc


async def test_failing_edits_still_deliver_the_whole_text_once() -> None:
    clock, adapter = FakeClock(), BrokenEdits(capabilities=caps(300))
    stream = make_stream(adapter, clock)
    deltas = [f"chunk{i} " for i in range(120)]
    for delta in deltas:
        await clock.advance(0.3)
        await stream.push(delta)
    assert len(adapter.sent) == 1
    final = "".join(deltas)
    sent = await settle(clock, asyncio.ensure_future(stream.finish(final)))
    assert len(sent) == len(adapter.sent) > 1
    assert all(len(text) <= 300 for text in adapter.texts())
    assert_reassembles(final, adapter.texts())
    await assert_done_once_each(adapter)


class BuggyEdits(TestChatAdapter):
    """An adapter whose edit has a bug: not a platform failure."""

    async def edit(self, sent: SentMessage, text: str) -> None:
        raise TypeError("a bug, not the platform")


async def test_a_failing_edit_that_is_no_platform_error_is_not_swallowed() -> None:
    clock, adapter = FakeClock(), BuggyEdits(capabilities=caps(300))
    stream = make_stream(adapter, clock)
    await clock.advance(1.0)
    await push(stream, "first words")
    await clock.advance(1.0)
    await push(stream, " and more")
    with pytest.raises(TypeError):
        await stream.finish("first words and more")


async def test_editing_an_unknown_message_is_message_not_found() -> None:
    adapter = TestChatAdapter()
    with pytest.raises(MessageNotFound) as raised:
        await adapter.edit(SentMessage("c1", "nope"), "text")
    assert raised.value.platform == "testchat" and not raised.value.retryable


async def test_utf16_streaming_respects_the_limit() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(40, interval=0.0))
    stream = make_stream(adapter, clock, length=utf16_length)
    for _ in range(30):
        await stream.push("ok 😀 ")
    final = "ok 😀 " * 30
    await stream.finish(final)
    assert all(utf16_length(text) <= 40 for d in adapter.sent for text in d.history)
    assert adapter.texts() == split_text(final, 40, length=utf16_length)


async def test_finish_twice_is_an_error() -> None:
    stream = make_stream(TestChatAdapter(), FakeClock())
    await stream.finish("done")
    with pytest.raises(RuntimeError):
        await stream.finish("again")


# --- send_text -------------------------------------------------------------------------


async def test_send_text_splits_and_completes_each_message() -> None:
    adapter = TestChatAdapter(capabilities=caps(100))
    text = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum " * 5 for i in range(6))
    message = OutboundMessage("testchat", "c1", text, reply_to_message_id="m9", kind="notice")
    sent = await send_text(adapter, message)
    assert adapter.texts() == split_text(text, 100)
    assert len(sent) == len(adapter.sent) > 1
    assert [d.reply_to for d in adapter.sent] == ["m9"] + [None] * (len(sent) - 1)
    assert {d.kind for d in adapter.sent} == {"notice"}
    await assert_done_once_each(adapter)


class Budgeted(TestChatAdapter):
    """A platform whose rate budget is spent until ``budget`` is set."""

    def __init__(self) -> None:
        super().__init__(capabilities=caps(interval=0.0))
        self.budget = asyncio.Event()
        self.waited = 0

    async def ready(self, chat_id: str) -> None:
        self.waited += 1
        await self.budget.wait()


async def test_an_answer_done_before_the_budget_allowed_a_message_is_sent_once() -> None:
    clock, adapter = FakeClock(), Budgeted()
    stream = make_stream(adapter, clock)
    for word in ["The ", "answer ", "is ", "forty-two."]:
        await push(stream, word)
    assert adapter.waited == 1 and adapter.sent == []  # one update waiting, not four
    await stream.finish("The answer is forty-two.")
    assert adapter.texts() == ["The answer is forty-two."]
    assert [d.edits for d in adapter.sent] == [0]  # one send, no edit
    await assert_done_once_each(adapter)


async def test_when_the_budget_frees_the_newest_text_is_what_goes_out() -> None:
    clock, adapter = FakeClock(), Budgeted()
    stream = make_stream(adapter, clock)
    await push(stream, "first words")
    await push(stream, ", then more")
    await push(stream, ", and the newest")
    adapter.budget.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert adapter.sent[0].history == ["first words, then more, and the newest"]
    await stream.finish("first words, then more, and the newest.")
    assert adapter.texts() == ["first words, then more, and the newest."]
    await assert_done_once_each(adapter)


class SlowEdits(TestChatAdapter):
    """A platform whose sends and edits wait for ``go`` (a slow network)."""

    def __init__(self) -> None:
        super().__init__(capabilities=caps(interval=1.0))
        self.go = asyncio.Event()
        self.go.set()

    async def edit(self, sent: SentMessage, text: str) -> None:
        await self.go.wait()
        await super().edit(sent, text)


async def test_text_pushed_while_an_edit_was_sent_shows_though_no_more_comes() -> None:
    clock, adapter = FakeClock(), SlowEdits()
    stream = make_stream(adapter, clock)
    await clock.advance(1.0)
    await push(stream, "The answer")
    assert adapter.texts() == ["The answer"]
    adapter.go.clear()
    await clock.advance(1.0)
    await push(stream, " is")  # its edit is under way, held by the network
    await push(stream, " forty-two")  # pushed meanwhile; then the model pauses
    adapter.go.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert adapter.texts() == ["The answer is"]
    await clock.advance(1.0)  # no push: the interval alone brings the rest
    assert adapter.texts() == ["The answer is forty-two"]
    assert adapter.sent[0].edits == 2
    await settle(clock, asyncio.ensure_future(stream.finish("The answer is forty-two.")))
    assert adapter.texts() == ["The answer is forty-two."]
    await assert_done_once_each(adapter)


async def test_where_the_adapter_paces_the_final_text_lands_at_once() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(interval=1.0, paced=True))
    stream = make_stream(adapter, clock)
    await clock.advance(1.0)
    await push(stream, "The first words")
    assert adapter.texts() == ["The first words"]
    # the clock stands still: the edit interval paces streaming, the adapter the rest
    await asyncio.wait_for(stream.finish("The first words, and the rest."), 1)
    assert adapter.texts() == ["The first words, and the rest."]
    await assert_done_once_each(adapter)


async def test_elsewhere_the_final_edit_waits_out_the_edit_interval() -> None:
    clock, adapter = FakeClock(), TestChatAdapter(capabilities=caps(interval=1.0))
    stream = make_stream(adapter, clock)
    await clock.advance(1.0)
    await push(stream, "The first words")
    finishing = asyncio.ensure_future(stream.finish("The first words, and the rest."))
    for _ in range(10):
        await asyncio.sleep(0)
    assert not finishing.done() and adapter.texts() == ["The first words"]
    await clock.advance(0.5)
    assert not finishing.done()
    await clock.advance(0.5)
    await asyncio.wait_for(finishing, 1)
    assert adapter.texts() == ["The first words, and the rest."]

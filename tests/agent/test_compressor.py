"""ContextCompressor against a real LLMClient talking to the fake endpoint."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agent.compressor import (
    PRUNED_TOOL_OUTPUT,
    SUMMARY_PREFIX,
    ContextCompressor,
    estimate_tokens,
)
from agent.llm import LLMClient
from agent.settings import CompressionSettings, LLMSettings
from tests.fakes import FakeOpenAI

HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Relevant Files",
    "## Next Steps",
    "## Critical Context",
    "## Tools & Patterns",
)
LONG_OUTPUT = "x" * 300
SHORT_OUTPUT = "short result"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
async def llm(server: FakeOpenAI) -> AsyncIterator[LLMClient]:
    client = LLMClient(
        LLMSettings(
            base_url=server.base_url,
            api_key="test",
            model="main",
            auxiliary_model="aux",
            max_retries=0,
        )
    )
    yield client
    await client.aclose()


def make(llm: LLMClient, *, protect_first: int = 3, budget: int = 8000) -> ContextCompressor:
    settings = CompressionSettings(protect_first=protect_first, tail_token_budget=budget)
    return ContextCompressor(llm, settings, context_length=100_000)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for call_id, name, args in calls
        ],
    }


def result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def history() -> list[dict[str, Any]]:
    """Head 0-2, middle 3-7, tail 8-11 when the budget is ``tail_budget()``."""
    return [
        user("HEAD-USER wants the report fixed"),
        assistant("HEAD-ASSISTANT will look into it"),
        user("HEAD-USER-2 the file is report.py"),
        call(("call_1", "read_file", {"path": "MIDDLE-PATH.py"})),
        result("call_1", "MIDDLE-LONG-OUTPUT " + LONG_OUTPUT),
        call(("call_2", "run_tests", {"target": "MIDDLE-TESTS"})),
        result("call_2", SHORT_OUTPUT),
        assistant("MIDDLE-ANSWER the bug is an off-by-one"),
        user("TAIL-USER please also update the docs"),
        call(("call_3", "read_file", {"path": "TAIL-PATH.md"})),
        result("call_3", "TAIL-LONG-OUTPUT " + LONG_OUTPUT),
        assistant("TAIL-ANSWER docs updated"),
    ]


def tail_budget() -> int:
    return estimate_tokens(history()[8:])


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


def summaries(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        m
        for m in messages
        if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
    ]


def assert_paired(messages: list[dict[str, Any]]) -> None:
    """Every tool call has its result in the same slice, and every result its call."""
    issued: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        for tool_call in message.get("tool_calls") or []:
            issued.add(tool_call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in issued, f"orphan result {message}"
            answered.add(message["tool_call_id"])
    assert issued == answered, f"calls without results: {issued - answered}"


# -- estimate and trigger ---------------------------------------------------------


def test_estimate_tokens_is_deterministic_and_counts_tool_calls() -> None:
    assert estimate_tokens([user("a" * 400)]) == 110
    assert estimate_tokens([user("a" * 400)] * 3) == 330
    assert estimate_tokens([]) == 0
    with_call = call(("c", "tool", {"arg": "value"}))
    assert estimate_tokens([with_call]) > estimate_tokens([assistant("")])
    assert estimate_tokens(history()) == estimate_tokens(history())


async def test_should_compress_at_threshold_only(llm: LLMClient) -> None:
    compressor = ContextCompressor(llm, CompressionSettings(threshold=0.5), context_length=1000)
    assert compressor.threshold_tokens == 500
    assert not compressor.should_compress(499)
    assert compressor.should_compress(500)
    assert compressor.should_compress(10_000)


async def test_should_compress_never_when_disabled(llm: LLMClient) -> None:
    settings = CompressionSettings(enabled=False)
    compressor = ContextCompressor(llm, settings, context_length=1000)
    assert not compressor.should_compress(1_000_000)


# -- phases ---------------------------------------------------------------------


async def test_old_long_tool_outputs_pruned_short_and_tail_untouched(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.error(500)
    original = history()
    out = await make(llm, budget=tail_budget()).compress(original)
    assert out[4]["content"] == PRUNED_TOOL_OUTPUT
    assert out[4]["tool_call_id"] == "call_1"
    assert out[6]["content"] == SHORT_OUTPUT
    assert out[10] == original[10]
    assert out[10]["content"].startswith("TAIL-LONG-OUTPUT")
    assert [m for i, m in enumerate(out) if i != 4] == [m for i, m in enumerate(original) if i != 4]


async def test_summary_request_sees_pruned_middle(server: FakeOpenAI, llm: LLMClient) -> None:
    server.reply("## Goal\nFix the report")
    await make(llm, budget=tail_budget()).compress(history())
    prompt = prompt_of(server.requests[0])
    assert PRUNED_TOOL_OUTPUT in prompt
    assert "MIDDLE-LONG-OUTPUT" not in prompt
    assert f"TOOL RESULT: {SHORT_OUTPUT}" in prompt


async def test_head_kept_byte_identical_and_tail_within_budget(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.reply("## Goal\nFix the report")
    original = history()
    budget = tail_budget()
    out = await make(llm, budget=budget).compress(original)
    assert json.dumps(out[:3]) == json.dumps(original[:3])
    assert out[3] == {"role": "user", "content": f"{SUMMARY_PREFIX}\n## Goal\nFix the report"}
    assert out[4:] == original[8:]
    assert estimate_tokens(out[4:]) <= budget
    assert len(out) == 3 + 1 + 4


async def test_tail_takes_as_much_as_the_budget_allows(server: FakeOpenAI, llm: LLMClient) -> None:
    original = history()
    budget = tail_budget() + estimate_tokens(original[7:8]) - 1
    out = await make(llm, budget=budget).compress(original)
    assert out[4:] == original[8:]  # message 7 misses the budget by one token


async def test_tail_keeps_at_least_two_messages(server: FakeOpenAI, llm: LLMClient) -> None:
    original = [
        *history()[:8],
        user("TAIL-USER " + "q" * 800),
        assistant("TAIL-ANSWER " + "r" * 800),
    ]
    out = await make(llm, budget=1).compress(original)
    assert out[4:] == original[-2:]


async def test_tail_never_starts_with_a_tool_result(server: FakeOpenAI, llm: LLMClient) -> None:
    original = history()  # ends with call_3, its result and an answer
    out = await make(llm, budget=1).compress(original)
    assert out[4:] == original[9:]
    assert_paired(out[4:])


async def test_head_extends_over_tool_results(server: FakeOpenAI, llm: LLMClient) -> None:
    original = [
        user("HEAD-USER read two files"),
        call(("h1", "read_file", {"path": "a"}), ("h2", "read_file", {"path": "b"})),
        result("h1", "HEAD-RESULT-A " + LONG_OUTPUT),
        result("h2", "HEAD-RESULT-B"),
        user("MIDDLE-USER now compare them"),
        assistant("MIDDLE-ANSWER they differ"),
        user("TAIL-USER thanks"),
        assistant("TAIL-ANSWER welcome"),
    ]
    out = await make(llm, protect_first=2, budget=estimate_tokens(original[6:])).compress(original)
    assert out[:4] == original[:4]  # long head output is kept verbatim too
    assert summaries(out) == [out[4]]
    assert out[5:] == original[6:]
    prompt = prompt_of(server.requests[0])
    assert "MIDDLE-USER" in prompt
    assert "HEAD-RESULT" not in prompt


async def test_no_orphan_tool_messages_at_the_cut(server: FakeOpenAI, llm: LLMClient) -> None:
    original = [
        user("HEAD-USER check the servers"),
        assistant("HEAD-ASSISTANT on it"),
        user("HEAD-USER-2 both of them"),
        user("MIDDLE-USER start with the logs"),
        assistant("MIDDLE-ANSWER logs look fine"),
        call(("t1", "ping", {"host": "TAIL-HOST-A"}), ("t2", "ping", {"host": "TAIL-HOST-B"})),
        result("t1", "TAIL-PING-A " + "p" * 250),
        result("t2", "TAIL-PING-B ok"),
        assistant("TAIL-ANSWER both reachable"),
    ]
    # The budget fits exactly the second tool result and the answer: the raw cut
    # falls between the two results of one call.
    budget = estimate_tokens(original[7:])
    out = await make(llm, budget=budget).compress(original)
    tail = out[4:]
    assert tail == original[5:]
    assert tail[0]["role"] == "assistant" and tail[0]["tool_calls"]
    assert_paired(out[:3])
    assert_paired(tail)
    prompt = prompt_of(server.requests[0])
    assert "MIDDLE-ANSWER" in prompt
    assert "TAIL-" not in prompt


async def test_result_has_no_orphans_for_any_budget(server: FakeOpenAI, llm: LLMClient) -> None:
    original = history()
    for budget in range(1, estimate_tokens(original) + 20, 7):
        out = await make(llm, budget=budget).compress(original)
        assert_paired([m for m in out if m not in summaries(out)])
        assert len(summaries(out)) <= 1


# -- the summary call -------------------------------------------------------------


async def test_summary_request_uses_aux_model_and_template(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.reply("## Goal\nFix the report")
    compressor = make(llm, budget=tail_budget())
    await compressor.compress(history())
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["model"] == "aux"
    assert "tools" not in request
    prompt = prompt_of(request)
    for heading in HEADINGS:
        assert heading in prompt
    assert 'ASSISTANT called read_file({"path": "MIDDLE-PATH.py"})' in prompt
    assert 'ASSISTANT called run_tests({"target": "MIDDLE-TESTS"})' in prompt
    assert "ASSISTANT: MIDDLE-ANSWER the bug is an off-by-one" in prompt
    assert "PREVIOUS SUMMARY" not in prompt
    for marker in ("HEAD-USER", "HEAD-ASSISTANT", "TAIL-USER", "TAIL-PATH", "TAIL-ANSWER"):
        assert marker not in prompt
    assert compressor.compressions == 1
    assert compressor.previous_summary == "## Goal\nFix the report"


async def test_very_long_items_are_truncated_for_the_summary(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    original = history()
    original[7] = assistant("MIDDLE-START " + "y" * 20_000 + " MIDDLE-END")
    await make(llm, budget=tail_budget()).compress(original)
    prompt = prompt_of(server.requests[0])
    assert "MIDDLE-START" in prompt and "MIDDLE-END" in prompt
    assert len(prompt) < 10_000


async def test_second_compression_updates_previous_summary(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.reply("## Goal\nFIRST-SUMMARY")
    server.reply("## Goal\nSECOND-SUMMARY")
    compressor = make(llm, budget=tail_budget())
    first = await compressor.compress(history())
    grown = [
        *first,
        user("LATER-USER now ship it"),
        assistant("LATER-ANSWER shipped"),
        user("NEWEST-USER anything else?"),
        call(("call_9", "read_file", {"path": "NEWEST.md"})),
        result("call_9", "NEWEST-OUTPUT"),
        assistant("NEWEST-ANSWER " + "z" * 400),
    ]
    second = await compressor.compress(grown)
    prompt = prompt_of(server.requests[1])
    assert "You are updating a context compaction summary" in prompt
    assert "PREVIOUS SUMMARY:\n## Goal\nFIRST-SUMMARY" in prompt
    assert "NEW TURNS TO INCORPORATE:" in prompt
    assert "PRESERVE all existing information" in prompt
    assert "TAIL-ANSWER" in prompt and "LATER-ANSWER" in prompt
    assert SUMMARY_PREFIX not in prompt  # the old summary is not a new turn
    assert prompt.count("FIRST-SUMMARY") == 1
    assert summaries(second) == [second[3]]
    assert second[3]["content"] == f"{SUMMARY_PREFIX}\n## Goal\nSECOND-SUMMARY"
    assert second[:3] == history()[:3]
    assert second[-1]["content"].startswith("NEWEST-ANSWER")
    assert compressor.compressions == 2
    assert compressor.previous_summary == "## Goal\nSECOND-SUMMARY"


async def test_summary_found_in_history_seeds_a_fresh_compressor(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    original = history()
    original.insert(3, user(f"{SUMMARY_PREFIX}\n## Goal\nSTORED-SUMMARY"))
    out = await make(llm, budget=tail_budget()).compress(original)
    prompt = prompt_of(server.requests[0])
    assert "PREVIOUS SUMMARY:\n## Goal\nSTORED-SUMMARY" in prompt
    assert SUMMARY_PREFIX not in prompt
    assert len(summaries(out)) == 1


# -- failures and no-ops ------------------------------------------------------------


async def test_llm_failure_returns_pruned_copy(
    server: FakeOpenAI, llm: LLMClient, caplog: pytest.LogCaptureFixture
) -> None:
    server.error(500)
    compressor = make(llm, budget=tail_budget())
    original = history()
    with caplog.at_level(logging.INFO, logger="agent"):
        out = await compressor.compress(original)
    expected = history()
    expected[4] = {**expected[4], "content": PRUNED_TOOL_OUTPUT}
    assert out == expected
    assert summaries(out) == []
    assert compressor.compressions == 0
    assert compressor.previous_summary is None
    warnings = [r for r in caplog.records if r.name == "agent.compressor"]
    assert any(r.levelno == logging.WARNING for r in warnings)
    for record in caplog.records:
        assert "MIDDLE" not in record.getMessage() and "TAIL" not in record.getMessage()


async def test_empty_summary_is_treated_as_failure(server: FakeOpenAI, llm: LLMClient) -> None:
    server.reply("   ")
    compressor = make(llm, budget=tail_budget())
    out = await compressor.compress(history())
    assert summaries(out) == []
    assert len(out) == len(history())
    assert compressor.compressions == 0


async def test_input_list_is_not_mutated(server: FakeOpenAI, llm: LLMClient) -> None:
    original = history()
    snapshot = copy.deepcopy(original)
    out = await make(llm, budget=tail_budget()).compress(original)
    assert original == snapshot
    assert out is not original
    out[0]["content"] = "changed"
    out[-2]["tool_call_id"] = "changed"
    assert original == snapshot


async def test_input_not_mutated_on_failure(server: FakeOpenAI, llm: LLMClient) -> None:
    server.error(500)
    original = history()
    snapshot = copy.deepcopy(original)
    out = await make(llm, budget=tail_budget()).compress(original)
    assert original == snapshot
    assert out is not original


async def test_origins_name_the_input_message_each_copy_came_from(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.reply("## Goal\nFix the report")
    original = history()
    compressed = await make(llm, budget=tail_budget()).compress_with_origins(original)
    assert compressed.origins == [0, 1, 2, None, 8, 9, 10, 11]
    for message, origin in zip(compressed.messages, compressed.origins, strict=True):
        if origin is not None:
            assert message == original[origin] and message is not original[origin]

    server.error(500)
    failed = await make(llm, budget=tail_budget()).compress_with_origins(original)
    assert failed.origins == list(range(len(original)))
    assert failed.messages[4]["content"] == PRUNED_TOOL_OUTPUT  # pruned, still message 4


async def test_nothing_to_compress_makes_no_request(server: FakeOpenAI, llm: LLMClient) -> None:
    compressor = make(llm)  # the default budget holds the whole history
    original = history()
    out = await compressor.compress(original)
    assert out == original and out is not original
    assert server.requests == []
    assert compressor.compressions == 0

    short = [user("hi"), assistant("hello")]
    assert await compressor.compress(short) == short
    assert await compressor.compress([]) == []
    assert server.requests == []


async def test_only_an_old_summary_in_the_middle_makes_no_request(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    original = [
        *history()[:3],
        user(f"{SUMMARY_PREFIX}\nOLD"),
        *history()[8:],
    ]
    out = await make(llm, budget=tail_budget()).compress(original)
    assert out == original
    assert server.requests == []


def test_the_tail_budget_scales_with_the_context_length(llm: LLMClient) -> None:
    """Unset, the tail is a share of the threshold: an 8,000-token context keeps 1,600
    tokens verbatim, not 8,000 (which would leave nothing to summarise)."""
    budgets = {
        context: ContextCompressor(llm, CompressionSettings(), context).tail_token_budget
        for context in (8_000, 128_000)
    }
    assert budgets == {8_000: 1_600, 128_000: 25_600}
    chosen = CompressionSettings(tail_token_budget=500)
    assert ContextCompressor(llm, chosen, 8_000).tail_token_budget == 500

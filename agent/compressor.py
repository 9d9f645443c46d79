"""Context compression: keep the head and recent tail, summarise the middle.

``ContextCompressor.compress`` runs five phases over a history (without the
system message):

1. prune: old tool outputs between head and tail longer than
   ``PRUNE_MIN_CHARS`` become ``PRUNED_TOOL_OUTPUT`` (no LLM call);
2. head: the first ``protect_first`` messages stay verbatim, extended so that
   an assistant's tool calls keep their results;
3. tail: the most recent messages fitting the tail budget stay verbatim (at
   least ``MIN_TAIL_MESSAGES``), never starting with a tool result; the budget
   is ``compression.tail_token_budget``, or else ``TAIL_SHARE`` of the
   threshold, so it scales with the context length;
4. summary: the middle is summarised by one auxiliary-model call into a
   structured template;
5. iterative update: an earlier summary is updated with the new turns rather
   than summarised again as if it were a turn.

The result is ``head + [summary message] + tail``. A failing summary call
leaves the (pruned) history in place: compression never raises.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.errors import LLMError
from agent.llm import LLMClient
from agent.messages import ChatMessage, UserMessage
from agent.settings import TAIL_SHARE, CompressionSettings
from agent.usage import Charge
from memory.log_content import loggable

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 10
"""Added per message for role and framing."""

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
PRUNED_TOOL_OUTPUT = "[Old tool output cleared to save context space]"

PRUNE_MIN_CHARS = 200
"""Old tool outputs longer than this are replaced by ``PRUNED_TOOL_OUTPUT``."""

MIN_TAIL_MESSAGES = 2
MAX_ITEM_CHARS = 3000
"""Longest text of one message sent to the summariser; longer text is cut."""

MAX_ARGUMENT_CHARS = 500
"""Longest tool-call argument text sent to the summariser."""

SUMMARY_TEMPLATE = """\
## Goal
What the user is trying to achieve overall.

## Constraints & Preferences
Requirements, preferences and corrections the user stated.

## Progress
### Done
Work completed, with concrete results.
### In Progress
Work started but not finished.
### Blocked
Problems and open questions, with error messages where relevant.

## Key Decisions
Decisions taken and why.

## Relevant Files
Files, paths, URLs and identifiers involved, with what matters about each.

## Next Steps
What should happen next, in order.

## Critical Context
Exact values, names, numbers and facts that must not be lost.

## Tools & Patterns
Tools used, how they behaved, and approaches that worked or failed."""

_FRESH_PROMPT = """\
You are compacting a conversation between a user and an AI assistant so the \
assistant can continue the work without the original turns. Write a concise \
but complete summary of the turns below, using exactly this structure \
(write "None" under a heading with nothing to report):

{template}

TURNS TO SUMMARIZE:
{turns}

Reply with the summary only."""

_UPDATE_PROMPT = """\
You are updating a context compaction summary. A previous compaction \
summarised the earlier part of a conversation between a user and an AI \
assistant; new turns have happened since and must be incorporated.

PREVIOUS SUMMARY:
{previous}

NEW TURNS TO INCORPORATE:
{turns}

Update the summary using exactly this structure (write "None" under a heading \
with nothing to report):

{template}

PRESERVE all existing information from the previous summary that is still \
relevant, ADD the new progress, decisions and facts, and move items from \
"In Progress" to "Done" when the new turns completed them. Reply with the \
updated summary only."""


def _content_text(content: Any) -> str:
    """Message content as text; multimodal parts reduced to their text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'attachment')}]")
            else:
                parts.append(str(part))
        return " ".join(parts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


IMAGE_TOKENS = 1000
"""What one image in a message is counted as (its base64 says nothing about tokens)."""


def _message_tokens(message: ChatMessage) -> int:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    images = 0
    if isinstance(content, list):
        text = _content_text(content)
        images = sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    elif content is not None and not isinstance(content, str):
        text = json.dumps(content, ensure_ascii=False, sort_keys=True)
    calls = message.get("tool_calls")
    if calls:
        text += json.dumps(calls, ensure_ascii=False, sort_keys=True)
    return len(text) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS + images * IMAGE_TOKENS


def estimate_tokens(messages: Sequence[ChatMessage]) -> int:
    """Rough, deterministic token count: JSON of content and tool calls / 4, +10 each."""
    return sum(_message_tokens(message) for message in messages)


def _is_summary(message: ChatMessage) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_PREFIX)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = limit - limit // 4
    return f"{text[:keep]} …[{len(text) - limit} chars cut]… {text[-(limit - keep) :]}"


def serialize_turns(messages: Sequence[ChatMessage]) -> str:
    """Messages as readable text for the summariser."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        text = _truncate(_content_text(message.get("content")).strip(), MAX_ITEM_CHARS)
        if role == "tool":
            lines.append(f"TOOL RESULT: {text}")
        elif message["role"] == "assistant":
            if text:
                lines.append(f"ASSISTANT: {text}")
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                arguments = _truncate(str(function.get("arguments") or ""), MAX_ARGUMENT_CHARS)
                lines.append(f"ASSISTANT called {function.get('name', '?')}({arguments})")
        else:
            lines.append(f"{str(role or 'user').upper()}: {text}")
    return "\n\n".join(lines)


@dataclass(frozen=True)
class Compressed:
    """A compressed history (copies: editing it leaves the input alone), and its origins."""

    messages: list[ChatMessage]
    origins: list[int | None]
    """Per message, the index of the input message it is a copy of; None for the summary."""


class ContextCompressor:
    """Shrinks a history that has grown past ``threshold_tokens``."""

    def __init__(self, llm: LLMClient, settings: CompressionSettings, context_length: int) -> None:
        self.llm = llm
        self.settings = settings
        self.context_length = context_length
        self.threshold_tokens = int(context_length * settings.threshold)
        budget = settings.tail_token_budget
        self.tail_token_budget = (
            budget if budget is not None else int(self.threshold_tokens * TAIL_SHARE)
        )
        self.previous_summary: str | None = None
        self.compressions = 0
        self.charge: Charge | None = None
        """Whom the summary calls are charged to (the agent sets it per turn)."""

    def should_compress(self, estimated_tokens: int) -> bool:
        """True when enabled and the estimate reached ``threshold_tokens``."""
        return self.settings.enabled and estimated_tokens >= self.threshold_tokens

    def reset(self) -> None:
        """Forget the previous summary (a new conversation starts)."""
        self.previous_summary = None

    async def compress(
        self, messages: Sequence[ChatMessage], extra_context: str = ""
    ) -> list[ChatMessage]:
        """A new, shorter history; the input list is left untouched.

        ``extra_context`` (e.g. what memory providers extracted in
        ``on_pre_compress``) is handed to the summariser with the turns.
        """
        return (await self.compress_with_origins(messages, extra_context)).messages

    async def compress_with_origins(
        self, messages: Sequence[ChatMessage], extra_context: str = ""
    ) -> Compressed:
        """``compress``, telling which input message each message of the result copies."""
        result = copy.deepcopy(list(messages))
        unchanged = Compressed(result, list(range(len(result))))
        head_end = self._head_end(result)
        tail_start = self._tail_start(result, head_end)
        pruned = self._prune(result, head_end, tail_start)
        if tail_start <= head_end:
            logger.debug("Nothing to compress between head and tail")
            return unchanged
        middle = result[head_end:tail_start]
        summaries = [m for m in middle if _is_summary(m)]
        turns = [m for m in middle if not _is_summary(m)]
        if not turns:
            logger.debug("Only an earlier summary lies between head and tail")
            return unchanged
        previous = self.previous_summary
        if summaries:
            previous = _content_text(summaries[-1]["content"])[len(SUMMARY_PREFIX) :].strip()
        summary = await self._summarise(turns, previous, extra_context)
        if summary is None:
            return unchanged
        summary_message: UserMessage = {"role": "user", "content": f"{SUMMARY_PREFIX}\n{summary}"}
        compressed = [*result[:head_end], summary_message, *result[tail_start:]]
        origins = [*range(head_end), None, *range(tail_start, len(result))]
        self.previous_summary = summary
        self.compressions += 1
        logger.info(
            "Compressed %d middle messages (%d tool outputs pruned): ~%d -> ~%d tokens",
            len(middle),
            pruned,
            estimate_tokens(messages),
            estimate_tokens(compressed),
        )
        return Compressed(compressed, origins)

    def _head_end(self, messages: Sequence[ChatMessage]) -> int:
        end = min(self.settings.protect_first, len(messages))
        if end == 0:
            return 0
        while end < len(messages) and messages[end].get("role") == "tool":
            end += 1
        return end

    def _tail_start(self, messages: Sequence[ChatMessage], head_end: int) -> int:
        n = len(messages)
        start = n
        accumulated = 0
        for i in range(n - 1, head_end - 1, -1):
            tokens = _message_tokens(messages[i])
            kept = n - 1 - i
            if accumulated + tokens > self.tail_token_budget and kept >= MIN_TAIL_MESSAGES:
                break
            accumulated += tokens
            start = i
        while start > head_end and start < n and messages[start].get("role") == "tool":
            start -= 1
        return start

    @staticmethod
    def _prune(messages: list[ChatMessage], start: int, end: int) -> int:
        count = 0
        for i in range(start, end):
            message = messages[i]
            if message["role"] != "tool" or message.get("content") == PRUNED_TOOL_OUTPUT:
                continue
            if len(_content_text(message.get("content"))) > PRUNE_MIN_CHARS:
                messages[i] = {**message, "content": PRUNED_TOOL_OUTPUT}
                count += 1
        return count

    async def _summarise(
        self, turns: list[ChatMessage], previous: str | None, extra_context: str = ""
    ) -> str | None:
        serialized = serialize_turns(turns)
        if extra_context.strip():
            serialized += f"\n\nNOTES FROM MEMORY PROVIDERS:\n{extra_context.strip()}"
        if previous:
            prompt = _UPDATE_PROMPT.format(
                previous=previous, turns=serialized or "None", template=SUMMARY_TEMPLATE
            )
        else:
            prompt = _FRESH_PROMPT.format(turns=serialized, template=SUMMARY_TEMPLATE)
        model = self.llm.auxiliary_model
        try:
            response = await self.llm.complete(
                [{"role": "user", "content": prompt}], model=model, charge=self.charge
            )
        except LLMError as exc:
            logger.warning("Context summary failed, keeping the history: %s", exc)
            return None
        summary = response.content.strip()
        if summary.startswith(SUMMARY_PREFIX):
            summary = summary[len(SUMMARY_PREFIX) :].strip()
        if not summary:
            logger.warning("Context summary came back empty, keeping history")
            return None
        logger.debug("Context summary (%d chars): %s", len(summary), loggable(summary))
        return summary

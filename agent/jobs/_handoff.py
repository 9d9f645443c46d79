"""The handoff summary: a few lines the next session of the same chat starts with."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agent.errors import AgentError
from agent.llm import LLMClient
from agent.messages import ChatMessage
from agent.usage import Charge
from memory.store import scan_memory_content

__all__ = [
    "HANDOFF_MAX_CHARS",
    "HANDOFF_PROMPT",
    "HANDOFF_SUMMARY_MAX",
    "checked_summary",
    "summarize_for_handoff",
]

logger = logging.getLogger(__name__)

HANDOFF_SUMMARY_MAX = 1_200
"""Characters of a handoff summary kept for the next session's system prompt."""
HANDOFF_PROMPT = (
    "Summarise this conversation for yourself, to pick it up again in a new session: "
    "at most five short bullet points — the topic, what was decided or answered, what "
    "is still open. No greetings, no preamble.\n\nCONVERSATION:\n{transcript}"
)
HANDOFF_MAX_CHARS = 12_000


async def summarize_for_handoff(
    llm: LLMClient, messages: Sequence[ChatMessage], charge: Charge | None = None
) -> str | None:
    """A short summary of the session for the next one; None when there is nothing to say."""
    lines = [
        f"{m['role'].upper()}: {m['content']}"
        for m in messages
        if m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
    ]
    if not lines:
        return None
    transcript = "\n".join(lines)[-HANDOFF_MAX_CHARS:]
    try:
        response = await llm.complete(
            [{"role": "user", "content": HANDOFF_PROMPT.format(transcript=transcript)}],
            model=llm.auxiliary_model,
            charge=charge,
        )
    except AgentError as exc:
        logger.warning("handoff summary skipped: %s", exc)
        return None
    return checked_summary(response.content)


def checked_summary(text: str) -> str | None:
    """A summary fit to open the next system prompt: capped, and refused like a memory
    write when it carries an instruction or hidden characters (it was written by the
    model from what a user said, so it is untrusted text)."""
    summary = text.strip()
    if len(summary) > HANDOFF_SUMMARY_MAX:
        summary = summary[:HANDOFF_SUMMARY_MAX].rsplit(" ", 1)[0] + " …"
    if not summary:
        return None
    threat = scan_memory_content(summary)
    if threat is not None:
        logger.warning("handoff summary dropped: %s", threat)
        return None
    return summary

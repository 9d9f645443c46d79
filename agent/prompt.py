"""The system prompt: identity, frozen memory blocks, guidance, platform hint.

It is built once per session from the store's frozen snapshot and stays
byte-identical on every request (so prefix caches keep hitting) until a
compression rebuilds it. Nothing here may vary between two builds from the same
inputs: no clocks, no random ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.store import MemoryStore

TARGETS = ("memory", "user")

DEFAULT_PERSONA = (
    "You are chorus, a helpful, friendly assistant that people talk to in chat. "
    "You are direct and concise, you say so when you are unsure, and you never invent "
    "facts about the person you are talking to. You remember people across "
    "conversations through your memory, and you treat what one person tells you as "
    "theirs alone."
)

MEMORY_GUIDANCE = (
    "You have persistent memory (the memory tool). Save what will matter in future "
    "conversations: who the user is, their preferences and corrections, stable facts "
    "about their environment. Do NOT save task progress, session outcomes, "
    "completed-work logs, or temporary TODO state to memory; use session_search to "
    "recall those from past transcripts. The USER PROFILE below belongs to the person "
    "you are talking to now; MEMORY is your own notes, shared across everyone you talk "
    "to, so never put one person's private details there."
)

SESSION_SEARCH_GUIDANCE = (
    "When the user refers to an earlier conversation, or you need details of past work "
    "that are not in memory, call session_search before answering rather than guessing."
)

HANDOFF_PROMPT_MAX = 1_500
"""Characters of a stored handoff summary that reach a system prompt, whatever is stored."""
HANDOFF_HEADER = (
    "SUMMARY OF YOUR PREVIOUS CONVERSATION WITH THIS USER (the session was renewed; "
    "use it to keep the thread, do not repeat it back)"
)


def build_system_prompt(
    store: MemoryStore,
    *,
    platform_hint: str | None = None,
    persona: str | None = None,
    handoff_summary: str | None = None,
    extra_blocks: Sequence[str] = (),
    targets: Sequence[str] = TARGETS,
) -> str:
    """Assemble the prompt from the store's frozen snapshot (never its live entries).

    Only the files of ``targets`` (``memory.memory_enabled``,
    ``memory.user_profile_enabled``) are in it; with neither, no memory guidance.
    """
    parts = [(persona or DEFAULT_PERSONA).strip()]
    if targets:
        parts.append(MEMORY_GUIDANCE)
    parts.append(SESSION_SEARCH_GUIDANCE)
    if platform_hint:
        parts.append(platform_hint.strip())
    for target in TARGETS:
        block = store.format_for_system_prompt(target) if target in targets else None
        if block:
            parts.append(block)
    parts.extend(block.strip() for block in extra_blocks if block and block.strip())
    if handoff_summary and handoff_summary.strip():
        parts.append(f"{HANDOFF_HEADER}:\n{handoff_summary.strip()[:HANDOFF_PROMPT_MAX]}")
    return "\n\n".join(parts)

"""The session-end memory flush, as the ``end_session`` job makes it.

No agent is built for it: the transcript is replayed, the session's store,
shared-write gate and provider (``agent_context="flush"``) are opened, and
``flush_memories`` makes its one memory-only call. A transcript that carries
others' content (``agent.others``) has its shared-memory writes reviewed.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from agent.flush import flush_memories
from agent.history import replay
from agent.jobs._context import JobContext
from agent.llm import LLMClient
from agent.memory_writes import apply_memory_call
from agent.messages import transcript_messages
from agent.others import history_carries_others
from agent.prompt import build_system_prompt
from agent.tools.memory_tool import memory_tool_schema
from agent.tools.policy import refuse_not_offered
from agent.usage import Charge
from memory.paths import UserKey
from memory.people import PERSON_PLATFORM
from memory.providers import MemoryManager
from memory.store import MemoryStore
from memory.transcripts import AsyncSessionDB, SessionRecord

__all__ = ["flush_session"]


async def flush_session(
    ctx: JobContext, record: SessionRecord, llm: LLMClient, db: AsyncSessionDB
) -> None:
    """One memory-only LLM call over the session's transcript (``flush_memories``).

    The model sees the system prompt the session's turns were answered with (the
    one stored with the session), which this leaves as it is.
    """
    targets = ctx.config.memory.targets
    schema = memory_tool_schema(targets)
    if record.message_count == 0 or schema is None:  # nothing said, or nothing to save to
        return
    history = replay(transcript_messages(await db.get_messages(record.id)))
    owner = UserKey.parse(record.user_key)
    store = ctx.store_for(owner)
    await asyncio.to_thread(store.load_from_disk)
    manager = ctx.manager_for(record, "flush")
    account = None  # a linked person's session: admin rights follow its account
    if owner.platform == PERSON_PLATFORM and record.user_id:
        account = UserKey(record.platform, record.user_id)
    gate = ctx.shared_write_gate(record.id, owner, account)
    gate.others_content = history_carries_others(history)

    async def run_memory(arguments: dict[str, Any]) -> str:
        write = await apply_memory_call(
            arguments,
            store=store,
            shared_writes=gate,
            memory=manager,
            targets=targets,
            context="flush",
            origin="flush",
            session_id=record.id,
        )
        return write.text

    await flush_memories(
        history,
        ctx.config.memory.flush_min_turns,
        llm=llm,
        system_prompt=record.system_prompt or await _prompt_now(ctx, store, manager),
        run_memory=run_memory,
        schema=schema,
        refuse=functools.partial(
            refuse_not_offered, session_id=record.id, actor=record.user_key, audit=ctx.audit
        ),
        charge=Charge(record.user_key, record.id, "flush"),
    )


async def _prompt_now(ctx: JobContext, store: MemoryStore, manager: MemoryManager | None) -> str:
    """A system prompt for a session that has none stored, built from memory as it is now."""
    blocks: list[str] = []
    if manager is not None:
        blocks = await asyncio.to_thread(manager.build_system_prompt_blocks)
    return build_system_prompt(
        store,
        persona=ctx.config.agent.persona,
        extra_blocks=blocks,
        targets=ctx.config.memory.targets,
    )

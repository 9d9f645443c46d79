"""What the provider does with Hindsight once it knows the bank: retain parts, run tools.

Every call goes through the kit's :class:`~plugins.memory._kit.Guard`, so each is counted by the
circuit breaker and none is made while it is open.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from plugins.memory._kit import Guard

from . import _render, _tools
from ._buffer import Buffer
from ._client import HindsightAPI
from ._config import Settings

logger = logging.getLogger(__name__)

TOOL_CONTEXT = "stated in a conversation with the user (chorus)"


def retain_sealed(
    api: HindsightAPI, guard: Guard, settings: Settings, buffer: Buffer, platform: str
) -> None:
    """Retain every sealed part not yet in Hindsight; the first failure stops (and raises).

    While the breaker is open nothing is tried: the parts wait on disk for the
    next background call.
    """
    for part in buffer.unretained():
        if guard.paused:
            logger.info("hindsight paused: sealed turns wait on disk")
            return
        turns = buffer.turns(part)
        if not turns:
            continue
        call = partial(
            api.retain,
            part.bank_id,
            _render.document(turns),
            timeout=settings.retain_timeout,
            context=_render.context(platform),
            document_id=_render.document_id(part),
            timestamp=_render.iso(turns[0].at),
            metadata={"source": "chorus", "session_id": part.session_id},
            asynchronous=settings.retain_async,
        )
        guard.run("retain", call)
        buffer.mark_retained(part)
        logger.debug(
            "hindsight retained part %d of session %s (%d turns)",
            part.number,
            part.session_id,
            len(turns),
        )


def run_tool(
    api: HindsightAPI,
    guard: Guard,
    settings: Settings,
    banks: list[str],
    name: str,
    args: dict[str, Any],
) -> dict[str, Any]:
    """One tool call: a write on ``banks[0]`` (the owner's), a recall or reflect on each
    of ``banks`` (a linked person's accounts' too); its result without ``success``;
    ToolError for bad input."""
    if name == _tools.RETAIN:
        content = _tools.content_arg(args)
        retain = partial(
            api.retain,
            banks[0],
            content,
            timeout=settings.timeout,
            context=_tools.context_arg(args) or TOOL_CONTEXT,
            metadata={"source": "chorus_tool"},
            asynchronous=True,  # the turn waits for the call: no waiting for extraction
        )
        return {"stored": True, "items": guard.run("retain", retain)}
    query = _tools.query_arg(args)
    if name == _tools.RECALL:
        memories = []
        for bank in banks:
            recall = partial(
                api.recall,
                bank,
                query,
                timeout=settings.timeout,
                max_tokens=_tools.max_tokens_arg(args, settings.recall_max_tokens),
                budget=_tools.budget_arg(args, settings.recall_budget),
            )
            memories += guard.run("recall", recall)
        return {"results": [m.public() for m in memories], "count": len(memories)}
    if name != _tools.REFLECT:
        raise _tools.ToolError(f"unknown tool '{name}'")
    answers = []
    for bank in banks:
        reflect = partial(
            api.reflect,
            bank,
            query,
            timeout=settings.timeout,
            budget=_tools.budget_arg(args, settings.reflect_budget),
            context=_tools.context_arg(args),
        )
        answers.append(guard.run("reflect", reflect))
    return {"answer": "\n\n".join(answer for answer in answers if answer)}

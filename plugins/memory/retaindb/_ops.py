"""Sending queued writes and recalling, all for one user id at a time."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
import uuid
from typing import Any

from . import _files
from ._client import (
    CONTEXT,
    INGEST_SESSION,
    MEMORY,
    SEARCH,
    BackendFailed,
    Client,
    NotFound,
    Paused,
    path,
)
from ._queue import Write, WriteQueue

logger = logging.getLogger(__name__)

MAX_LINE = 400
RECALL_ITEMS = 5
CONTEXT_TOKENS = 1200
LOOKUP_TOP_K = 10


def idem_key(*parts: str) -> str:
    """The queue key of a write that may be handed over twice: a hash of what it is.

    For writes chorus can deliver again (a re-run ``sync_turn`` job, a mirrored
    ``memory`` write): the same turn of the same session always has the same key.
    """
    return "chorus-" + hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:40]


def turn_key(queue: WriteQueue, user_id: str, session: str, said: str, answer: str) -> str:
    """The key of a turn write: the same for a re-delivered job, a new one for the same
    words said again after the first were withdrawn."""
    base = idem_key("turn", user_id, session, said, answer)
    times = queue.withdrawals(base)
    return base if times == 0 else idem_key(base, str(times))


def fresh_key() -> str:
    """The key of a write made once (a tool call): unique, kept in its queue row."""
    return "chorus-" + uuid.uuid4().hex


def _flat(text: Any) -> str:
    return " ".join(str(text or "").split())


def memories_in(answer: Any, key: str, limit: int) -> list[dict[str, Any]]:
    """``{"id", "content", "score"}`` of the memories listed under ``key`` of an answer."""
    items = answer.get(key) if isinstance(answer, dict) else None
    found = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        text = _flat(item.get("content") or item.get("memory"))
        if text:
            memory_id = item.get("id")
            found.append(
                {
                    "id": None if memory_id is None else str(memory_id),
                    "content": text[:MAX_LINE],
                    "score": item.get("score"),
                }
            )
    return found[:limit]


def _memory_id(answer: Any) -> str | None:
    """The id of the memory a ``POST /v1/memory`` answer describes."""
    if not isinstance(answer, dict):
        return None
    memory = answer.get("memory")
    for candidate in (
        memory.get("id") if isinstance(memory, dict) else None,
        answer.get("id"),
        answer.get("memory_id"),
    ):
        if candidate is not None and str(candidate):
            return str(candidate)
    return None


def _owned(queue: WriteQueue, user_id: str, found: list[dict[str, Any]]) -> None:
    ids = [str(hit["id"]) for hit in found if hit.get("id")]
    if ids:
        queue.own(user_id, ids)


def search(
    client: Client,
    queue: WriteQueue,
    user_id: str,
    query: str,
    limit: int,
    *,
    session: str = "",
    timeout: float | None = None,
) -> list[dict[str, Any]]:
    body = client.scoped(user_id, session, query=query, top_k=limit, include_pending=True)
    answer = client.call("search", "POST", SEARCH, json=body, timeout=timeout)
    found = [hit for hit in memories_in(answer, "results", limit) if hit["id"]]
    _owned(queue, user_id, found)
    return found


def context(
    client: Client,
    queue: WriteQueue,
    user_id: str,
    query: str,
    *,
    session: str = "",
    timeout: float | None = None,
) -> list[dict[str, Any]]:
    body = client.scoped(
        user_id, session, query=query, include_memories=True, max_tokens=CONTEXT_TOKENS
    )
    answer = client.call("context", "POST", CONTEXT, json=body, timeout=timeout)
    found = memories_in(answer, "results", 20)
    _owned(queue, user_id, found)
    return found


def profile(
    client: Client, queue: WriteQueue, user_id: str, *, timeout: float | None = None
) -> list[dict[str, Any]]:
    params = {"project": client.project, "include_pending": "true"}
    answer = client.call(
        "profile", "GET", path("memory", "profile", user_id), params=params, timeout=timeout
    )
    found = memories_in(answer, "memories", 200)
    _owned(queue, user_id, found)
    return found


def format_recall(facts: list[dict[str, Any]], relevant: list[dict[str, Any]]) -> str:
    """The profile and the memories relevant now, five of each, no line twice."""
    seen: set[str] = set()

    def lines(items: list[dict[str, Any]]) -> list[str]:
        out: list[str] = []
        for item in items:
            text = str(item["content"])
            if text.lower() not in seen and len(out) < RECALL_ITEMS:
                seen.add(text.lower())
                out.append(f"- {text}")
        return out

    relevant_lines, fact_lines = lines(relevant), lines(facts)
    parts = []
    if fact_lines:
        parts.append("\n".join(["Profile:", *fact_lines]))
    if relevant_lines:
        parts.append("\n".join(["Relevant memories:", *relevant_lines]))
    return "\n".join(parts)


def recall(
    client: Client,
    queue: WriteQueue,
    user_ids: list[str],
    query: str,
    *,
    session: str = "",
    timeout: float | None = None,
) -> str:
    """What RetainDB knows for ``query``: the profile and the context query's memories
    of each of ``user_ids`` (the owner, then a linked person's accounts)."""
    relevant: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    for n, user_id in enumerate(user_ids):
        where = session if n == 0 else ""  # an account's memories are from its own sessions
        relevant += context(client, queue, user_id, query, session=where, timeout=timeout)
        facts += profile(client, queue, user_id, timeout=timeout)
    return format_recall(facts, relevant)


# -- writes ------------------------------------------------------------------


def _stored_already(client: Client, queue: WriteQueue, write: Write, content: str) -> str | None:
    """The id of a memory with exactly ``content`` for this user, if the server has one."""
    found = search(client, queue, write.user_id, content, LOOKUP_TOP_K)
    wanted = _flat(content)[:MAX_LINE]
    return next((hit["id"] for hit in found if hit["content"] == wanted), None)


def _importance(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return 0.5


def remember(client: Client, queue: WriteQueue, write: Write) -> None:
    payload = write.payload
    content = str(payload.get("content") or "")
    metadata = payload.get("metadata")
    old = metadata if isinstance(metadata, dict) else {}  # a row queued by an earlier release
    session = str(payload.get("session_id") or old.get("session_id") or "")
    kind = payload.get("kind") or old.get("kind")
    if queue.turn_memory(write.idem) is not None:  # stored already: a job delivered again
        return
    # Sent before without an answer: perhaps stored, and RetainDB has no idempotency key.
    memory_id = _stored_already(client, queue, write, content) if write.attempts else None
    if memory_id is None:
        body = client.scoped(
            write.user_id,
            session,
            content=content,
            memory_type=str(payload.get("memory_type") or "factual"),
            importance=_importance(payload.get("importance")),
            write_mode="sync",
        )
        memory_id = _memory_id(client.call("remember", "POST", MEMORY, json=body))
    if memory_id is None:
        logger.warning("retaindb stored a memory but its answer named no id")
        return
    queue.own(write.user_id, [memory_id])
    if kind != "tool":  # a key that can come again: remember what it became
        queue.record_turn(write.idem, write.user_id, memory_id)


def send(client: Client, queue: WriteQueue, write: Write) -> None:
    payload = write.payload
    if write.kind == "file":
        content = str(payload.get("content") or "")
        ingest = bool(payload.get("ingest"))
        _files.upload(client, write.user_id, write.target, content, ingest)
    elif write.kind == "forget":
        forget_turn(client, queue, write)
    elif write.kind == "session":
        if queue.turn_memory(write.idem) is not None:  # handed over already: a job again
            return
        body = client.scoped(
            write.user_id,
            str(payload.get("session_id") or ""),
            messages=payload.get("messages") or [],
            write_mode="sync",
        )
        client.call("session ingest", "POST", INGEST_SESSION, json=body)
        queue.record_turn(write.idem, write.user_id, "")
    else:
        remember(client, queue, write)


def forget_turn(client: Client, queue: WriteQueue, write: Write) -> None:
    """Delete on the server the memory the withdrawn turn ``write.target`` became."""
    memory_id = queue.turn_memory(write.target)
    if not memory_id:  # never stored (refused for good), or already forgotten
        logger.debug("retaindb: a withdrawn turn has no memory to delete")
        return
    # NotFound: deleted already (a replayed forget, or by the retaindb_forget tool)
    with contextlib.suppress(NotFound):
        client.call("forget", "DELETE", path("memory", memory_id))
    queue.disown(memory_id)
    queue.forget_turn(write.target)


def withdraw_turn(
    client: Client, queue: WriteQueue, user_id: str, session: str, said: str, answer: str
) -> str:
    """Take back a turn write: unsent, it is dropped from the queue; sent, a ``forget``
    write is queued after it and the queue drained. Returns which."""
    turn_idem = turn_key(queue, user_id, session, said, answer)
    queue.count_withdrawal(idem_key("turn", user_id, session, said, answer))
    with queue.draining(2.0) as holding:
        if holding and queue.drop(turn_idem):
            return "dropped"
    sent = queue_and_send(client, queue, fresh_key(), user_id, "forget", {}, turn_idem)
    return "forgotten" if sent else "queued"


def drain(client: Client, queue: WriteQueue, *, wait: float = 0.0, deadline: float = 60.0) -> int:
    """Send queued writes oldest first until the queue is empty, a failure, or ``deadline`` s.

    Returns how many were acknowledged. A write the server refuses for good
    (a 4xx other than auth or rate limits, or a 404) is set aside in the
    queue's dead letters with a WARNING so it cannot block the rest; any other
    failure stops the drain and keeps the row.
    """
    sent = 0
    stop = time.monotonic() + deadline
    with queue.draining(wait) as holding:
        if not holding:
            return 0
        while time.monotonic() < stop and client.breaker.allow():
            write = queue.oldest()
            if write is None:
                break
            queue.sending(write)
            try:
                send(client, queue, write)
            except BackendFailed as exc:
                if not exc.permanent:
                    break
                _set_aside(queue, write, exc.cause)
                continue
            except NotFound:
                _set_aside(queue, write, "HTTP 404")
                continue
            except Paused:
                break
            queue.done(write)
            sent += 1
    return sent


def _set_aside(queue: WriteQueue, write: Write, cause: str) -> None:
    logger.warning(
        "retaindb refused a queued %s write (%s); it is kept in queue.db's dead letters, "
        "not sent again%s",
        write.kind,
        cause,
        " (is base_url the RetainDB API?)" if cause == "HTTP 404" else "",
    )
    queue.set_aside(write, cause)


def queue_and_send(
    client: Client,
    queue: WriteQueue,
    idem: str,
    user_id: str,
    kind: str,
    payload: dict[str, Any],
    target: str = "",
) -> bool:
    """Queue one write and try to send the queue now; True when this write was acknowledged."""
    queue.enqueue(idem, user_id, kind, payload, target)
    try:
        drain(client, queue, wait=2.0, deadline=30.0)
    except Exception as exc:  # the row stays queued; a later drain sends it
        logger.info("retaindb drain stopped (%s)", type(exc).__name__)
    return not queue.queued(idem)

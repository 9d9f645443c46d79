"""Sending queued writes, searching, and the tools, all for one user id at a time."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
import uuid
from typing import Any

from . import _tools
from ._client import BackendFailed, Client, NotFound, Paused, user_path
from ._queue import Write, WriteQueue

logger = logging.getLogger(__name__)

MAX_LINE = 400


def idem_key(*parts: str) -> str:
    """The idempotency key of a write that may be handed over twice: a hash of what it is.

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
    """The key of a write made once (a tool call): unique, kept in its queue row for replays.

    A content hash would be wrong here: putting A, then B, then A again must
    leave A, and remembering a fact again after forgetting it must store it.
    """
    return "chorus-" + uuid.uuid4().hex


def send(client: Client, queue: WriteQueue, write: Write) -> None:
    if write.kind == "file":
        path = user_path(write.user_id, "files", write.target)
        client.call("file put", "PUT", path, json=write.payload, idempotency_key=write.idem)
    elif write.kind == "forget":
        forget_turn(client, queue, write)
    else:
        path = user_path(write.user_id, "memories")
        answer = client.call(
            "remember", "POST", path, json=write.payload, idempotency_key=write.idem
        )
        if write.payload.get("metadata", {}).get("kind") == "turn":
            memory = answer.get("memory") if isinstance(answer, dict) else None
            memory_id = memory.get("id") if isinstance(memory, dict) else None
            if memory_id is not None:
                queue.record_turn(write.idem, write.user_id, str(memory_id))


def forget_turn(client: Client, queue: WriteQueue, write: Write) -> None:
    """Delete on the server the memory the withdrawn turn ``write.target`` became."""
    memory_id = queue.turn_memory(write.target)
    if memory_id is None:  # never stored (refused for good), or already forgotten
        logger.debug("retaindb: a withdrawn turn has no memory to delete")
        return
    # NotFound: deleted already (a replayed forget, or by the retaindb_forget tool)
    with contextlib.suppress(NotFound):
        client.call("forget", "DELETE", user_path(write.user_id, "memories", memory_id))
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
    (a 4xx other than auth or rate limits) is dropped with a WARNING so it
    cannot block the rest; any other failure stops the drain and keeps the row.
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
            try:
                send(client, queue, write)
            except BackendFailed as exc:
                if not exc.permanent:
                    queue.failed(write)
                    break
                logger.warning("retaindb refused a queued %s (%s); dropped", write.kind, exc.cause)
            except NotFound:
                logger.warning("retaindb refused a queued %s (not found); dropped", write.kind)
            except Paused:
                break
            queue.done(write)
            sent += 1
    return sent


def search(
    client: Client, user_id: str, query: str, limit: int, timeout: float | None = None
) -> list[dict[str, Any]]:
    path = user_path(user_id, "memories", "search")
    answer = client.call(
        "search", "GET", path, params={"q": query, "limit": limit}, timeout=timeout
    )
    items = answer.get("results") if isinstance(answer, dict) else None
    found = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("id") is None:
            continue
        text = " ".join(str(item.get("content") or "").split())
        if text:
            found.append(
                {"id": str(item["id"]), "content": text[:MAX_LINE], "score": item.get("score")}
            )
    return found[:limit]


def format_recall(found: list[dict[str, Any]]) -> str:
    return "\n".join(f"- {hit['content']}" for hit in found)


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


def run_tool(
    client: Client, queue: WriteQueue, user_id: str, name: str, args: dict[str, Any]
) -> dict[str, Any]:
    """One tool call's result (without ``success``); ToolError for bad input."""
    if name == _tools.REMEMBER:
        content = _tools.text_arg(args, "content", _tools.MAX_CONTENT)
        idem = fresh_key()
        payload = {"content": content, "metadata": {"source": "chorus_tool"}}
        sent = queue_and_send(client, queue, idem, user_id, "memory", payload)
        return {"remembered": content, **({} if sent else {"queued": True})}
    if name == _tools.SEARCH:
        query = _tools.text_arg(args, "query", _tools.MAX_QUERY, scan=False)
        found = search(client, user_id, query, _tools.limit_arg(args, 5))
        return {"results": found, "count": len(found)}
    if name == _tools.FORGET:
        memory_id = _tools.id_arg(args)
        try:
            client.call("forget", "DELETE", user_path(user_id, "memories", memory_id))
        except NotFound:
            raise _tools.ToolError(
                f"no memory with id {memory_id} belongs to this person"
            ) from None
        return {"id": memory_id, "deleted": True}
    if name == _tools.FILE_PUT:
        file_name = _tools.name_arg(args)
        content = _tools.text_arg(args, "content", _tools.MAX_FILE)
        idem = fresh_key()
        sent = queue_and_send(client, queue, idem, user_id, "file", {"content": content}, file_name)
        return {"name": file_name, "size": len(content), **({} if sent else {"queued": True})}
    if name == _tools.FILE_GET:
        file_name = _tools.name_arg(args)
        try:
            answer = client.call("file get", "GET", user_path(user_id, "files", file_name))
        except NotFound:
            raise _tools.ToolError(f"this person has no file called {file_name}") from None
        file = answer.get("file") if isinstance(answer, dict) else None
        stored = file.get("content") if isinstance(file, dict) else None
        return {"name": file_name, "content": str(stored or "")}
    if name == _tools.FILE_LIST:
        answer = client.call("file list", "GET", user_path(user_id, "files"))
        files = answer.get("files") if isinstance(answer, dict) else None
        listed = [
            {"name": str(f.get("name")), "size": f.get("size"), "updated_at": f.get("updated_at")}
            for f in (files if isinstance(files, list) else [])
            if isinstance(f, dict) and f.get("name")
        ]
        return {"files": listed, "count": len(listed)}
    raise _tools.ToolError(f"unknown tool '{name}'")

"""One person's RetainDB data: exported and erased through RetainDB's own routes.

RetainDB has no route that deletes a user: their memories are read from their
profile (``GET /v1/memory/profile/{user_id}``) and deleted one by one
(``DELETE /v1/memory/{id}``) until the profile is empty; their files (under
chorus's path of theirs, :mod:`._files`) are deleted by id. What the local
write queue holds of them goes too, so nothing of theirs is sent afterwards.
"""

from __future__ import annotations

import contextlib
from typing import Any

from . import _files, _ops
from ._client import Client, NotFound, path
from ._queue import WriteQueue

MAX_ROUNDS = 50
"""Profile pages deleted at most (200 memories each) before erasure gives up."""


def export(client: Client, queue: WriteQueue, user_id: str) -> dict[str, Any]:
    memories = _ops.profile(client, queue, user_id)
    files = []
    for file in _files.listing(client, user_id):
        text = _files.read(client, user_id, str(file["name"]))
        files.append({**file, "text": text})
    return {
        "memories": [
            {"id": m.get("id"), "text": m.get("content") or m.get("text")} for m in memories
        ],
        "files": files,
    }


def forget(client: Client, queue: WriteQueue, user_id: str) -> tuple[int, int]:
    """Delete their memories and files; (how many went, how many are still there)."""
    queue.forget_user(user_id)
    removed = 0
    for _ in range(MAX_ROUNDS):
        found = [m for m in _ops.profile(client, queue, user_id) if m.get("id")]
        if not found:
            break
        for memory in found:
            with contextlib.suppress(NotFound):
                client.call("forget", "DELETE", path("memory", str(memory["id"])))
                removed += 1
    for file in _files._listed(client, _files.prefix(user_id)):
        with contextlib.suppress(NotFound):
            client.call("file delete", "DELETE", path("files", str(file["id"])))
            removed += 1
    queue.forget_user(user_id)
    left = len(_ops.profile(client, queue, user_id)) + len(
        _files._listed(client, _files.prefix(user_id))
    )
    queue.forget_user(user_id)
    return removed, left

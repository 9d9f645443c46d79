"""One person's OpenViking data: exported and erased through the server's own routes.

What chorus puts in OpenViking for a person lies in their user space: the
memories the server extracts (``viking://user/<id>/memories/…``) and the
sessions chorus committed (``GET /api/v1/sessions`` lists them). Export walks
the memories (``ls`` stops a few levels down, so it walks folder by folder) and
reads each; erasure deletes every session (``DELETE /api/v1/sessions/{id}``)
and the memories folder (``DELETE /api/v1/fs?recursive=true``), then looks again.
"""

from __future__ import annotations

import contextlib
from typing import Any

from plugins.memory._kit import NotFound

from . import _tools
from ._client import Client

MAX_ENTRIES = 10_000
AGENT_FILES = ("soul.md", "identity.md")
"""Files OpenViking keeps about the agent itself in every user space, not about the person."""


def memories_root(user: str) -> str:
    return f"{_tools.user_root(user)}/memories"


def memory_files(client: Client, user: str) -> list[str]:
    """The URIs of every memory file in ``user``'s space."""
    found: list[str] = []
    folders = [memories_root(user)]
    while folders and len(found) < MAX_ENTRIES:
        try:
            uri = folders.pop()
            entries = client.call("list", "GET", "/api/v1/fs/ls", user, params={"uri": uri})
        except NotFound:
            continue
        for entry in entries if isinstance(entries, list) else []:
            uri = str(entry.get("uri", "")) if isinstance(entry, dict) else ""
            if not uri.startswith(memories_root(user) + "/"):
                continue
            name = uri.rsplit("/", 1)[-1]
            if entry.get("isDir", entry.get("is_dir")):
                folders.append(uri)
            elif not name.startswith(".") and name not in AGENT_FILES:
                found.append(uri)
    return found


def session_ids(client: Client, user: str) -> list[str]:
    listed = client.call("list", "GET", "/api/v1/sessions", user)
    return [
        str(s["session_id"])
        for s in (listed if isinstance(listed, list) else [])
        if isinstance(s, dict) and s.get("session_id")
    ]


def export(client: Client, user: str) -> dict[str, Any]:
    memories: list[dict[str, Any]] = []
    for uri in memory_files(client, user):
        try:
            text = client.call("read", "GET", "/api/v1/content/read", user, params={"uri": uri})
        except NotFound:
            continue
        memories.append({"id": uri, "text": text if isinstance(text, str) else str(text)})
    return {"user": user, "memories": memories, "sessions": session_ids(client, user)}


def forget(client: Client, user: str) -> tuple[int, list[str]]:
    """Delete the person's sessions and memories; (how many went, what is still listed)."""
    files = memory_files(client, user)
    sessions = session_ids(client, user)
    for sid in sessions:
        with contextlib.suppress(NotFound):
            client.call("forget", "DELETE", f"/api/v1/sessions/{sid}", user)
    with contextlib.suppress(NotFound):
        client.call(
            "forget",
            "DELETE",
            "/api/v1/fs",
            user,
            params={"uri": memories_root(user), "recursive": "true"},
        )
    left = memory_files(client, user) + session_ids(client, user)
    return len(files) + len(sessions), left

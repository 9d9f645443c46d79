"""One user's OpenViking operations: commits of sealed batches, search, and the tools.

The OpenViking user id of a chorus user key is :func:`ov_user`: the key made
safe for the server's ``[a-zA-Z0-9_-]`` ids, plus a hash of the exact key so two
keys that read alike never share a space. Every request names it, and every
URI chorus sends or accepts names that user's own space explicitly
(``viking://user/<id>/…``), so a server that does not honour the identity
headers refuses the request instead of mixing people up.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import uuid
from pathlib import Path
from typing import Any

from plugins.memory._kit import BackendFailed, NotFound, Paused

from . import _tools
from ._batch import Batches, Marker, Message, turn_id
from ._client import Client
from ._config import PROVIDER_NAME

logger = logging.getLogger(__name__)

MAX_LINE = 400
RECALL_FILE = "recall.json"


def ov_user(user_key: str) -> str:
    safe = re.sub(r"[^a-zA-Z0-9_-]+", "_", user_key).strip("_")[:48] or "user"
    return f"{safe}-{hashlib.sha256(user_key.encode('utf-8')).hexdigest()[:10]}"


def _count(meta: Any, key: str) -> int:
    value = meta.get(key) if isinstance(meta, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _owner(meta: Any) -> str | None:
    owner = meta.get("user") if isinstance(meta, dict) else None
    user_id = owner.get("user_id") if isinstance(owner, dict) else None
    return user_id if isinstance(user_id, str) else None


def commit_marker(client: Client, batches: Batches, marker: Marker) -> None:
    """Send a sealed batch as one OpenViking session and commit it, resuming where it stopped.

    Holds the owner's lock, so two processes never resume the same marker at once.
    """
    user = ov_user(marker.owner)
    path = f"/api/v1/sessions/{marker.commit_id}"
    with batches.locked(marker.owner):
        if not marker.path.exists():
            return  # another process finished it
        meta = client.call("session", "GET", path, user, params={"auto_create": "true"})
        if _owner(meta) != user:
            # api_key mode, or a proxy dropping headers: the session is someone else's space
            logger.warning(
                "openviking put a session of one user in another user's space: the server "
                "must run with server.auth_mode = trusted; nothing is committed"
            )
            raise BackendFailed("session", "user not honoured", provider=PROVIDER_NAME)
        if _count(meta, "commit_count") == 0:
            for message in marker.messages[_count(meta, "message_count") :]:
                client.call("add message", "POST", f"{path}/messages", user, json=message)
            client.call("commit", "POST", f"{path}/commit", user)
        batches.finish(marker)
    logger.debug("openviking committed %s (%d messages)", marker.commit_id, len(marker.messages))


def resume(client: Client, batches: Batches) -> int:
    """Commit every unfinished marker under the home; stops at the first failure."""
    done = 0
    for marker in batches.markers():
        commit_marker(client, batches, marker)
        done += 1
    return done


def hits(result: Any, user: str, limit: int) -> list[dict[str, Any]]:
    """The memory hits of a ``search/find`` result inside ``user``'s own space."""
    found = []
    root = _tools.user_root(user) + "/"
    items = result.get("memories") if isinstance(result, dict) else None
    for item in items if isinstance(items, list) else []:
        uri = item.get("uri") if isinstance(item, dict) else None
        if not isinstance(uri, str) or not uri.startswith(root):
            continue
        text = " ".join(str(item.get("abstract") or item.get("content") or "").split())
        if text:
            score = item.get("score")
            found.append({"uri": uri, "abstract": text[:MAX_LINE], "score": score})
    return found[:limit]


def format_recall(found: list[dict[str, Any]]) -> str:
    return "\n".join(f"- {hit['abstract']}" for hit in found)


def search(
    client: Client, user_key: str, query: str, limit: int, timeout: float | None = None
) -> list[dict[str, Any]]:
    user = ov_user(user_key)
    body = {"query": query, "target_uri": _tools.user_root(user), "limit": limit}
    result = client.call("search", "POST", "/api/v1/search/find", user, json=body, timeout=timeout)
    return hits(result, user, limit)


def search_all(
    client: Client, user_keys: list[str], query: str, limit: int, timeout: float | None = None
) -> list[dict[str, Any]]:
    """The hits of each space of ``user_keys`` (a linked person's accounts' too), in turn."""
    found: list[dict[str, Any]] = []
    for user_key in user_keys:
        found += search(client, user_key, query, limit, timeout)
    return found


def _readable(
    args: dict[str, Any], user_keys: list[str], default: str | None = None
) -> tuple[str, str]:
    """The ``uri`` argument in the space of one of ``user_keys`` (the owner's first), and
    that space's user; the owner's ToolError when it lies in none."""
    first: _tools.ToolError | None = None
    for user_key in user_keys:
        user = ov_user(user_key)
        try:
            return _tools.uri_arg(args, user, default), user
        except _tools.ToolError as exc:
            first = first or exc
    assert first is not None
    raise first


def store_recall(directory: Path, text: str) -> None:
    tmp = directory / (RECALL_FILE + ".tmp")
    tmp.write_text(json.dumps({"text": text, "at": time.time()}), encoding="utf-8")
    tmp.replace(directory / RECALL_FILE)


def cached_recall(directory: Path, max_age: float) -> str:
    try:
        data = json.loads((directory / RECALL_FILE).read_text(encoding="utf-8"))
        if time.time() - float(data["at"]) <= max_age:
            return str(data["text"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return ""


def _commit_or_queue(client: Client, batches: Batches, marker: Marker | None) -> dict[str, Any]:
    """Commit now; if the server fails, the marker stays and a later call commits it."""
    if marker is None:
        return {}
    try:
        commit_marker(client, batches, marker)
    except (BackendFailed, Paused) as exc:
        logger.debug("openviking commit deferred: %s", type(exc).__name__)
        return {"queued": True}
    return {}


def run_tool(
    client: Client,
    batches: Batches,
    user_keys: list[str],
    session_id: str,
    name: str,
    args: dict[str, Any],
) -> dict[str, Any]:
    """One tool call's result (without ``success``); ToolError for bad input.

    Writes act on ``user_keys[0]`` (the owner); search, read and list also reach the
    spaces of the other keys (the accounts linked into the owner, a person).
    """
    user_key = user_keys[0]
    user = ov_user(user_key)
    if name == _tools.VIKING_SEARCH:
        query, limit = _tools.query_arg(args), _tools.limit_arg(args, 5)
        found = search_all(client, user_keys, query, limit)
        return {"results": found, "count": len(found)}
    if name == _tools.VIKING_READ:
        uri, space = _readable(args, user_keys)
        try:
            text = client.call("read", "GET", "/api/v1/content/read", space, params={"uri": uri})
        except NotFound:
            raise _tools.ToolError(f"nothing at {uri}") from None
        content = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
        return {"uri": uri, "content": content[: _tools.MAX_READ]}
    if name == _tools.VIKING_LIST:
        uri, space = _readable(args, user_keys, _tools.DEFAULT_LIST)
        try:
            entries = client.call("list", "GET", "/api/v1/fs/ls", space, params={"uri": uri})
        except NotFound:
            return {"uri": uri, "entries": []}
        listed = [
            {"uri": e.get("uri"), "is_dir": bool(e.get("isDir", e.get("is_dir", False)))}
            for e in (entries if isinstance(entries, list) else [])
            if isinstance(e, dict) and str(e.get("uri", "")).startswith(uri + "/")
        ]
        return {"uri": uri, "entries": listed}
    if name == _tools.VIKING_FORGET:
        uri = _tools.uri_arg(args, user)
        # the server's DELETE answers ok for a URI where nothing is: look first
        try:
            stat = client.call("forget", "GET", "/api/v1/fs/stat", user, params={"uri": uri})
            if isinstance(stat, dict) and stat.get("isDir"):
                raise _tools.ToolError(f"{uri} is a directory; viking_forget removes one memory")
            client.call("forget", "DELETE", "/api/v1/fs", user, params={"uri": uri})
        except NotFound:
            raise _tools.ToolError(f"nothing at {uri}") from None
        return {"uri": uri, "deleted": True}
    if name == _tools.VIKING_REMEMBER:
        content = _tools.content_arg(args)
        note: list[Message] = [{"role": "user", "content": content}]
        # a fresh OpenViking session per note, so the same fact stored again
        # after viking_forget is committed again instead of matching the old commit
        note_session = f"note:{uuid.uuid4().hex}"
        batches.append(user_key, note_session, turn_id(note_session, content, ""), note)
        marker = batches.seal(user_key, note_session)
        return {"remembered": content, **_commit_or_queue(client, batches, marker)}
    if name == _tools.VIKING_COMMIT:
        marker = batches.seal(user_key, session_id)
        if marker is None:
            return {"committed": 0}
        return {"committed": len(marker.messages), **_commit_or_queue(client, batches, marker)}
    raise _tools.ToolError(f"unknown tool '{name}'")


__all__ = [
    "BackendFailed",
    "commit_marker",
    "ov_user",
    "resume",
    "run_tool",
    "search",
    "search_all",
]

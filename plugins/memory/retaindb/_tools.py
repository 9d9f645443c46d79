"""The eight ``retaindb_*`` tools: their schemas, the checks of their arguments, and the calls.

Every tool acts for one person (the speaker in a group, else the session's
user). Memory writes and file puts go through the durable queue like every
other write; reads go straight to the server.
"""

from __future__ import annotations

import math
import re
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

from . import _files, _ops
from ._client import Client, NotFound, path
from ._queue import WriteQueue

REMEMBER = "retaindb_remember"
SEARCH = "retaindb_search"
PROFILE = "retaindb_profile"
CONTEXT = "retaindb_context"
FORGET = "retaindb_forget"
FILE_PUT = "retaindb_file_put"
FILE_GET = "retaindb_file_get"
FILE_LIST = "retaindb_file_list"
TOOL_NAMES = (REMEMBER, SEARCH, PROFILE, CONTEXT, FORGET, FILE_PUT, FILE_GET, FILE_LIST)
MEMORY_TYPES = ("factual", "preference", "goal", "instruction", "event", "opinion")
MAX_CONTENT = 2000
MAX_FILE = 64_000
MAX_QUERY = 1000
MAX_LIMIT = 20
PROFILE_ITEMS = 50
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


_FILE_NAME = {
    "type": "string",
    "description": "A file name: letters, digits, '.', '_' or '-', at most 128 characters.",
}


def _schema(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": description, "parameters": parameters}


SCHEMAS: list[dict[str, Any]] = [
    _schema(
        REMEMBER,
        "Remember one durable fact about the person you are talking to.",
        {
            "content": {"type": "string", "description": f"At most {MAX_CONTENT} chars."},
            "memory_type": {"type": "string", "enum": list(MEMORY_TYPES)},
            "importance": {"type": "number", "minimum": 0, "maximum": 1},
        },
        ["content"],
    ),
    _schema(
        SEARCH,
        "Search your RetainDB memories of this person; returns ids.",
        {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        },
        ["query"],
    ),
    _schema(
        PROFILE,
        "This person's stable profile: the facts and preferences RetainDB keeps; returns ids.",
        {},
        [],
    ),
    _schema(
        CONTEXT,
        "What RetainDB recalls about this person for a task or question.",
        {"query": {"type": "string"}},
        ["query"],
    ),
    _schema(
        FORGET,
        "Forget one memory by the id retaindb_search or retaindb_profile gave.",
        {"memory_id": {"type": "string"}},
        ["memory_id"],
    ),
    _schema(
        FILE_PUT,
        "Save a small text file (notes, a list, a draft) for this person; an existing file "
        "of that name is replaced. ingest=true also makes its contents searchable memories.",
        {"name": _FILE_NAME, "content": {"type": "string"}, "ingest": {"type": "boolean"}},
        ["name", "content"],
    ),
    _schema(FILE_GET, "Read one of this person's files.", {"name": _FILE_NAME}, ["name"]),
    _schema(FILE_LIST, "List this person's files.", {}, []),
]


def text_arg(args: dict[str, Any], key: str, limit: int, *, scan: bool = True) -> str:
    value = args.get(key)
    text = strip_memory_context(value).strip() if isinstance(value, str) else ""
    if not text:
        raise ToolError(f"{key} must be a non-empty string")
    if len(text) > limit:
        raise ToolError(f"{key} is longer than {limit} characters")
    refusal = scan_memory_content(text) if scan else None
    if refusal is not None:
        raise ToolError(refusal)
    return text


def limit_arg(args: dict[str, Any], default: int) -> int:
    value = args.get("limit", default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ToolError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return value


def name_arg(args: dict[str, Any]) -> str:
    value = args.get("name")
    if not isinstance(value, str) or not _NAME.match(value.strip()):
        raise ToolError("name must be letters, digits, '.', '_' or '-' (at most 128)")
    return value.strip()


def id_arg(args: dict[str, Any]) -> str:
    value = args.get("memory_id")
    if not isinstance(value, str) or not value.strip() or "/" in value:
        raise ToolError("memory_id must be an id that retaindb_search returned")
    return value.strip()


def kind_args(args: dict[str, Any]) -> tuple[str, float]:
    """``memory_type`` and ``importance`` of a remember call, checked."""
    memory_type = args.get("memory_type", "factual")
    if memory_type not in MEMORY_TYPES:
        raise ToolError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}")
    importance = args.get("importance", 0.7)
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not math.isfinite(importance)
        or not 0 <= importance <= 1
    ):
        raise ToolError("importance must be a number from 0 to 1")
    return str(memory_type), float(importance)


def _queued(queue: WriteQueue, idem: str, sent: bool) -> dict[str, Any]:
    cause = queue.refused(idem)
    if cause is not None:
        raise ToolError(f"RetainDB refused it ({cause})")
    return {} if sent else {"queued": True}


def _read(
    client: Client,
    queue: WriteQueue,
    user_ids: list[str],
    session: str,
    name: str,
    args: dict[str, Any],
) -> dict[str, Any]:
    """search, profile or context over the memories of each of ``user_ids`` in turn (the
    session named for the owner's alone: an account's memories are from its own)."""
    found: list[dict[str, Any]] = []
    if name == PROFILE:
        for user_id in user_ids:
            found += _ops.profile(client, queue, user_id)[:PROFILE_ITEMS]
        return {"memories": found, "count": len(found)}
    query = text_arg(args, "query", MAX_QUERY, scan=False)
    limit = limit_arg(args, 5) if name == SEARCH else 0
    for n, user_id in enumerate(user_ids):
        where = session if n == 0 else ""
        if name == SEARCH:
            found += _ops.search(client, queue, user_id, query, limit, session=where)
        else:
            found += _ops.context(client, queue, user_id, query, session=where)
    return {"results" if name == SEARCH else "memories": found, "count": len(found)}


def run_tool(
    client: Client,
    queue: WriteQueue,
    user_ids: list[str],
    session: str,
    name: str,
    args: dict[str, Any],
) -> dict[str, Any]:
    """One tool call's result (without ``success``); ToolError for bad input.

    Everything acts on ``user_ids[0]`` (the owner) but search, profile and context,
    which read the memories of the other keys too (a linked person's accounts).
    """
    user_id = user_ids[0]
    if name == REMEMBER:
        content = text_arg(args, "content", MAX_CONTENT)
        memory_type, importance = kind_args(args)
        idem = _ops.fresh_key()
        payload = {
            "content": content,
            "memory_type": memory_type,
            "importance": importance,
            "session_id": session,
            "kind": "tool",
        }
        sent = _ops.queue_and_send(client, queue, idem, user_id, "memory", payload)
        return {"remembered": content, **_queued(queue, idem, sent)}
    if name in (SEARCH, PROFILE, CONTEXT):
        return _read(client, queue, user_ids, session, name, args)
    if name == FORGET:
        memory_id = id_arg(args)
        gone = ToolError(f"no memory with id {memory_id} belongs to this person")
        if not queue.owns(user_id, memory_id):  # RetainDB deletes by id alone
            raise gone
        try:
            client.call("forget", "DELETE", path("memory", memory_id))
        except NotFound:
            queue.disown(memory_id)
            raise gone from None
        queue.disown(memory_id)
        return {"id": memory_id, "deleted": True}
    if name == FILE_PUT:
        file_name = name_arg(args)
        content = text_arg(args, "content", MAX_FILE)
        payload = {"content": content, "ingest": args.get("ingest") is True}
        idem = _ops.fresh_key()
        sent = _ops.queue_and_send(client, queue, idem, user_id, "file", payload, file_name)
        return {"name": file_name, "size": len(content), **_queued(queue, idem, sent)}
    if name == FILE_GET:
        file_name = name_arg(args)
        text = _files.read(client, user_id, file_name)
        if text is None:
            raise ToolError(f"this person has no file called {file_name}")
        return {"name": file_name, "content": text}
    if name == FILE_LIST:
        listed = _files.listing(client, user_id)
        return {"files": listed, "count": len(listed)}
    raise ToolError(f"unknown tool '{name}'")

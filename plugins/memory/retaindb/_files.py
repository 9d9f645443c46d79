"""Each person's small text files in RetainDB's file store (``/v1/files``).

RetainDB's files belong to the API key's project, not to a user, so chorus
keeps a person's files under a path of their own, ``/chorus/<user key>/<name>``
(the user key URL-quoted, so it is one segment), and reads and lists only under
it. A file is put with a multipart upload; the server keeps every upload, so
after one succeeds the older copies of the same path are deleted and a read
takes the newest. ``ingest`` asks RetainDB to extract memories from the file
for that person too.
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import quote

from ._client import FILES, Client, NotFound, path

SCOPE = "PROJECT"
LIST_LIMIT = 200


def prefix(user_id: str) -> str:
    return f"/chorus/{quote(user_id, safe='')}/"


def remote_path(user_id: str, name: str) -> str:
    return prefix(user_id) + name


def _listed(client: Client, under: str) -> list[dict[str, Any]]:
    answer = client.call("file list", "GET", FILES, params={"prefix": under, "limit": LIST_LIMIT})
    files = answer.get("files") if isinstance(answer, dict) else None
    return [
        f
        for f in (files if isinstance(files, list) else [])
        if isinstance(f, dict) and f.get("id") and str(f.get("path") or "").startswith(under)
    ]


def _newest_first(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(files, key=lambda f: str(f.get("created_at") or ""), reverse=True)


def upload(client: Client, user_id: str, name: str, content: str, ingest: bool) -> str:
    """Store ``content`` as the person's file ``name``; returns the new file's id."""
    where = remote_path(user_id, name)
    answer = client.call(
        "file put",
        "POST",
        FILES,
        files={"file": (name, content.encode("utf-8"), "text/plain")},
        data={"path": where, "scope": SCOPE},
    )
    file = answer.get("file") if isinstance(answer, dict) else None
    file_id = str(file.get("id") or "") if isinstance(file, dict) else ""
    for older in _listed(client, where):
        if older.get("path") == where and str(older["id"]) != file_id:
            with contextlib.suppress(NotFound):  # deleted meanwhile
                client.call("file delete", "DELETE", path("files", str(older["id"])))
    if ingest and file_id:
        client.call(
            "file ingest", "POST", path("files", file_id, "ingest"), json={"user_id": user_id}
        )
    return file_id


def read(client: Client, user_id: str, name: str) -> str | None:
    """The text of the person's file ``name``; None when there is none."""
    where = remote_path(user_id, name)
    for file in _newest_first([f for f in _listed(client, where) if f.get("path") == where]):
        try:
            data = client.call(
                "file get", "GET", path("files", str(file["id"]), "content"), raw=True
            )
        except NotFound:  # deleted meanwhile: an older copy may be left
            continue
        return bytes(data).decode("utf-8", errors="replace")
    return None


def listing(client: Client, user_id: str) -> list[dict[str, Any]]:
    """The person's files, newest copy of each name, by name."""
    under = prefix(user_id)
    seen: dict[str, dict[str, Any]] = {}
    for file in _newest_first(_listed(client, under)):
        name = str(file["path"])[len(under) :]
        if name and "/" not in name and name not in seen:
            seen[name] = {
                "name": name,
                "size": file.get("size"),
                "updated_at": file.get("created_at"),
            }
    return sorted(seen.values(), key=lambda f: str(f["name"]))

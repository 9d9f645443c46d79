"""Exporting one person: everything chorus holds of them, as one zip archive.

``manifest.json`` says what is in the archive and, for a memory provider that
cannot export, why not. Then ``profile/USER.md`` per account, ``transcripts/
<session>.json`` (one file per session), ``staged_writes.json``,
``audit.json`` (rows they acted in), ``usage.json``, ``accounts.json`` (the
linked accounts) and ``providers/<name>.json``.
"""

from __future__ import annotations

import io
import json
import logging
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from memory.database import Location
from memory.paths import ChorusPaths
from memory.providers import MemoryProvider
from memory.store import DiskMemoryFiles, PostgresMemoryFiles
from memory.transcripts import SessionDB

from ._people import accounts_of
from ._sweep import Sweep

__all__ = ["export_person"]

logger = logging.getLogger(__name__)

MAX_SESSIONS = 100_000


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


def _provider(
    provider_for: Callable[[str], MemoryProvider | None], key: str
) -> tuple[str, Any, str]:
    """``(provider name, its export or None, why not)``."""
    try:
        provider = provider_for(key)
    except Exception as exc:
        logger.warning("export: the memory provider did not start: %s", type(exc).__name__)
        return "provider", None, "it could not be started"
    if provider is None:
        return "", None, ""
    try:
        exported = provider.export_user(key)
    except Exception as exc:
        logger.warning("export: %s export_user failed: %s", provider.name, type(exc).__name__)
        return provider.name, None, "it failed; try again later"
    finally:
        provider.shutdown()
    return provider.name, exported, "" if exported is not None else provider.cannot_export


def export_person(
    user_key: str,
    *,
    where: Location,
    paths: ChorusPaths,
    files: PostgresMemoryFiles | None = None,
    provider_for: Callable[[str], MemoryProvider | None] = lambda _key: None,
    now: Callable[[], float] = time.time,
) -> bytes:
    """The zip archive of everything chorus holds of the person ``user_key`` is."""
    accounts = accounts_of(user_key, where)
    store = files if files is not None else DiskMemoryFiles()
    buffer = io.BytesIO()
    manifest: dict[str, Any] = {
        "person": user_key,
        "exported_at": now(),
        "accounts": [a.key for a in accounts],
        "files": [],
        "providers": {},
    }
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:

        def put(name: str, text: str) -> None:
            archive.writestr(name, text)
            manifest["files"].append(name)

        put("accounts.json", _json(manifest["accounts"]))
        staged, audit, usage = [], [], []
        with SessionDB(where) as db, Sweep(where) as sweep:
            for account in accounts:
                key = account.key
                entries = store.read(paths.user_file(account))
                put(f"profile/{account.platform}-{account.id}/USER.md", "\n§\n".join(entries))
                for record in db.list_sessions(user_key=key, limit=MAX_SESSIONS):
                    messages = [asdict(m) for m in db.get_messages(record.id)]
                    put(
                        f"transcripts/{record.id}.json",
                        _json({"session": asdict(record), "messages": messages}),
                    )
                staged += sweep.rows("staged_memory_writes", "user_key", key)
                audit += sweep.rows("audit_log", "actor", key)
                audit += sweep.rows("audit_log", "args", key)
                usage += sweep.rows("usage_ledger", "person", key)
                name, exported, why = _provider(provider_for, key)
                if name:
                    if exported is None:
                        manifest["providers"][f"{name} ({key})"] = {"exported": False, "why": why}
                    else:
                        put(
                            f"providers/{name}-{account.platform}-{account.id}.json",
                            _json(exported),
                        )
                        manifest["providers"][f"{name} ({key})"] = {"exported": True}
        put("staged_writes.json", _json(staged))
        put("audit.json", _json(audit))
        put("usage.json", _json(usage))
        archive.writestr("manifest.json", _json(manifest))
    return buffer.getvalue()

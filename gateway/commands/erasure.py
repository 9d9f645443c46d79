"""Running an erasure or an export from the gateway's settings (the CLI, ``/delete-me``).

Builds what :func:`memory.erasure.erase_person` needs from the settings (the
shared database, the memory files, the active memory provider initialised for
one account) and writes one audit row: that an erasure happened and whether it
was complete, never what it erased.
"""

from __future__ import annotations

import time
from typing import Any

from gateway.access import GatewayDB
from gateway.config import Settings, database_location, secrets_environment
from memory.erasure import Receipt, erase_person, export_person
from memory.paths import ChorusPaths, UserKey
from memory.providers import MemoryProvider
from memory.store import memory_files_for
from plugins.memory import load_memory_provider, resolve_config

__all__ = ["erase", "export", "provider_for"]


def provider_for(cfg: Settings) -> Any:
    """The active memory provider, initialised in ``"background"`` for one account."""

    def make(key: str) -> MemoryProvider | None:
        name = cfg.memory.provider
        if not name:
            return None
        provider = load_memory_provider(name, cfg.home)
        config = resolve_config(
            provider, cfg.memory.providers.get(name, {}), secrets_environment(cfg.home)
        )
        user = UserKey.parse(key)
        provider.initialize(
            f"erasure-{user.platform}-{int(time.time())}",
            chorus_home=cfg.home,
            platform=user.platform,
            user_key=key,
            agent_context="background",
            chat_id=None,
            thread_id=None,
            is_direct=True,
            parent_session_id=None,
            config=config,
        )
        return provider

    return make


def erase(cfg: Settings, user_key: str, actor: str) -> Receipt:
    """Erase the person ``user_key`` is; audited as ``users erase`` with its outcome."""
    where = database_location(cfg)
    paths = ChorusPaths(cfg.home)
    files = memory_files_for(where, paths.memories_dir)
    try:
        receipt = erase_person(
            user_key, where=where, paths=paths, files=files, provider_for=provider_for(cfg)
        )
    finally:
        if files is not None:
            files.close()
    outcome = "ok" if receipt.complete else "partial"
    with GatewayDB(where) as db:
        db.audit(actor, "users erase", "<person>", outcome, time.time())
    return receipt


def export(cfg: Settings, user_key: str, actor: str) -> bytes:
    """The archive of the person ``user_key`` is; audited as ``users export``."""
    where = database_location(cfg)
    paths = ChorusPaths(cfg.home)
    files = memory_files_for(where, paths.memories_dir)
    try:
        archive = export_person(
            user_key, where=where, paths=paths, files=files, provider_for=provider_for(cfg)
        )
    finally:
        if files is not None:
            files.close()
    with GatewayDB(where) as db:
        db.audit(actor, "users export", "<person>", "ok", time.time())
    return archive

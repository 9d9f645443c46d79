"""Erasing one person: every store chorus keeps of them, with a receipt.

The order matters: the tombstone first (work that began before now then
writes nothing of theirs back), then the transcripts with their search index,
the profile, the component tables, and last the memory provider's copy.
Each store is reported erased or not, with why; content in shared places
(MEMORY.md, a group's sessions and profile) is listed for an admin to review.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from memory.database import Location
from memory.paths import ChorusPaths, UserKey
from memory.providers import MemoryProvider
from memory.store import PostgresMemoryFiles

from ._people import accounts_of
from ._sweep import PERSONAL_TABLES, Sweep
from ._tombstones import Tombstones

__all__ = ["Receipt", "StoreOutcome", "erase_person"]

logger = logging.getLogger(__name__)

ProviderFor = Callable[[str], MemoryProvider | None]
"""The active memory provider, initialised for one account (None: there is none)."""


@dataclass(frozen=True)
class StoreOutcome:
    store: str
    erased: bool
    detail: str = ""


@dataclass
class Receipt:
    """What an erasure did, store by store; what it left for an admin to review."""

    accounts: list[str]
    outcomes: list[StoreOutcome] = field(default_factory=list)
    review: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return all(o.erased for o in self.outcomes)

    def text(self) -> str:
        lines = [f"Erased the data of {', '.join(self.accounts)}:"]
        for o in self.outcomes:
            mark = "erased" if o.erased else "NOT erased"
            lines.append(f"- {o.store}: {mark}" + (f" ({o.detail})" if o.detail else ""))
        if self.review:
            lines.append("Left for an admin to review (shared with others):")
            lines.extend(f"- {item}" for item in self.review)
        return "\n".join(lines)


def _profile(paths: ChorusPaths, files: PostgresMemoryFiles | None, user: UserKey) -> None:
    path = paths.user_file(user)
    if files is not None:
        name = files.name_of(path)
        with files._locked(write=True) as conn:
            conn.execute("DELETE FROM memory_files WHERE name = ?", (name,))
    directory = paths.user_dir(user)
    if directory.exists():
        shutil.rmtree(directory)


def _provider(provider_for: ProviderFor, key: str) -> StoreOutcome:
    try:
        provider = provider_for(key)
    except Exception as exc:  # the provider could not start: said, never silent
        logger.warning("erasure: the memory provider did not start: %s", type(exc).__name__)
        return StoreOutcome("memory provider", False, "it could not be started")
    if provider is None:
        return StoreOutcome("memory provider", True, "none is configured")
    try:
        result = provider.forget_user(key)
    except Exception as exc:
        logger.warning("erasure: %s forget_user failed: %s", provider.name, type(exc).__name__)
        return StoreOutcome(f"memory provider {provider.name}", False, "it failed; try again")
    finally:
        provider.shutdown()
    return StoreOutcome(f"memory provider {provider.name}", result.erased, result.reason)


def erase_person(
    user_key: str,
    *,
    where: Location,
    paths: ChorusPaths,
    files: PostgresMemoryFiles | None = None,
    provider_for: ProviderFor = lambda _key: None,
    now: Callable[[], float] = time.time,
) -> Receipt:
    """Erase everything chorus holds of the person ``user_key`` is (every linked account)."""
    accounts = accounts_of(user_key, where)
    receipt = Receipt([a.key for a in accounts])
    with Tombstones(where) as tombstones, Sweep(where) as sweep:
        at = now()
        for account in accounts:
            tombstones.mark(account.key, at)
        for account in accounts:
            key = account.key
            sessions = sweep.delete_transcripts(key)
            receipt.outcomes.append(
                StoreOutcome(f"transcripts of {key}", True, f"{sessions} sessions, search index")
            )
            deliveries = sweep.delete_deliveries(account.platform, account.id)
            receipt.outcomes.append(
                StoreOutcome(f"received messages of {key}", True, f"{deliveries} in the inbox")
            )
            _profile(paths, files, account)
            receipt.outcomes.append(StoreOutcome(f"profile (USER.md) of {key}", True))
            for tables in PERSONAL_TABLES:
                sweep.delete_rows(tables, key)
                receipt.outcomes.append(StoreOutcome(f"{tables.store} of {key}", True))
            receipt.outcomes.append(_provider(provider_for, key))
            shared = sweep.shared_sessions(key)
            if shared:
                receipt.review.append(
                    f"{len(shared)} group sessions hold messages {key} wrote "
                    "(chorus sessions list --user <the group>)"
                )
        receipt.review.append(
            "MEMORY.md is shared by everyone: entries learnt from their sessions stay until "
            "an admin removes them (/admin memory)"
        )
    logger.info("erasure of %d accounts done (complete: %s)", len(accounts), receipt.complete)
    return receipt

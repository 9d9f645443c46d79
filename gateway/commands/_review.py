"""Reviewing staged writes to the shared MEMORY.md — shared by `/admin memory` and the CLI."""

from __future__ import annotations

from gateway.access import AdminReply
from memory.store import MemoryStore, StagedWrites

PENDING_SHOWN = 20
"""Staged writes listed at once; the rest after these are decided."""


def review(
    staging: StagedWrites, store: MemoryStore, action: str, target: str, by: str
) -> AdminReply:
    """``pending`` lists; ``approve``/``reject`` take an id or ``all``. Returns what happened.

    The reply's outcome is ``ok``, ``not_found`` (no such pending write), ``failed``
    (an approved write the store refused: scan or limits), ``usage`` or ``invalid``.
    """
    if action == "pending":
        pending = staging.pending()
        if not pending:
            return AdminReply("No writes waiting for review.", ok=True)
        lines = [f"{len(pending)} write(s) waiting for review:"]
        lines += [w.describe() for w in pending[:PENDING_SHOWN]]
        if len(pending) > PENDING_SHOWN:
            lines.append(f"… and {len(pending) - PENDING_SHOWN} more (decide these first).")
        return AdminReply("\n".join(lines), ok=True)
    if not target:
        return AdminReply(f"Usage: {action} <id>|all", ok=False, outcome="usage")
    if target.lower() == "all":
        ids = [w.id for w in staging.pending()]
    else:
        try:
            ids = [int(target.lstrip("#"))]
        except ValueError:
            text = f"Not an id: {target!r} (use a number from the pending list, or all)"
            return AdminReply(text, ok=False, outcome="invalid")
    if not ids:
        return AdminReply("No writes waiting for review.", ok=True)
    decided: list[str] = []
    outcomes: set[str] = set()
    for staged_id in ids:
        write = staging.get(staged_id)
        if write is None or write.status != "pending":
            outcomes.add("not_found")
        if action == "approve":
            store.load_from_disk()
            done, line = staging.approve(staged_id, store, by)
        else:
            done, line = staging.reject(staged_id, by)
        if not done and write is not None and write.status == "pending":
            outcomes.add("failed")  # the store refused the write: scan or limits
        decided.append(line)
    outcome = next((o for o in ("failed", "not_found") if o in outcomes), "ok")
    return AdminReply("\n".join(decided), ok=outcome == "ok", outcome=outcome)

"""Reviewing staged writes to the shared MEMORY.md — shared by `/admin memory` and the CLI."""

from __future__ import annotations

from memory.store import MemoryStore, StagedWrites

PENDING_SHOWN = 20
"""Staged writes listed at once; the rest after these are decided."""


def review(staging: StagedWrites, store: MemoryStore, action: str, target: str, by: str) -> str:
    """``pending`` lists; ``approve``/``reject`` take an id or ``all``. Returns what happened."""
    if action == "pending":
        pending = staging.pending()
        if not pending:
            return "No writes waiting for review."
        lines = [f"{len(pending)} write(s) waiting for review:"]
        lines += [w.describe() for w in pending[:PENDING_SHOWN]]
        if len(pending) > PENDING_SHOWN:
            lines.append(f"… and {len(pending) - PENDING_SHOWN} more (decide these first).")
        return "\n".join(lines)
    if not target:
        return f"Usage: {action} <id>|all"
    if target.lower() == "all":
        ids = [w.id for w in staging.pending()]
    else:
        try:
            ids = [int(target.lstrip("#"))]
        except ValueError:
            return f"Not an id: {target!r} (use a number from the pending list, or all)"
    if not ids:
        return "No writes waiting for review."
    lines = []
    for staged_id in ids:
        if action == "approve":
            store.load_from_disk()
            _, line = staging.approve(staged_id, store, by)
        else:
            _, line = staging.reject(staged_id, by)
        lines.append(line)
    return "\n".join(lines)

"""Entries in the memory files that fail today's threat scan — `/admin memory flagged` and the CLI.

They are withheld from every prompt until an admin keeps them (a keep mark, so
they go into the prompt again) or removes them from their file.
"""

from __future__ import annotations

from gateway.commands import _texts as t
from memory.store import FlaggedEntries, FlaggedEntry, make_visible

FLAGGED_SHOWN = 20
"""Flagged entries listed at once; the rest after these are decided."""
_PREVIEW_CHARS = 200


def _describe(flagged: FlaggedEntry) -> str:
    text = flagged.entry.replace("\n", " ⏎ ")
    if len(text) > _PREVIEW_CHARS:
        text = text[:_PREVIEW_CHARS] + f"… ({len(flagged.entry)} chars)"
    return t.FLAGGED_LINE.format(
        id=flagged.id, name=flagged.name, threat=flagged.threat, text=make_visible(text)
    )


def flagged_command(entries: FlaggedEntries, action: str, target: str) -> str:
    """``""`` lists; ``keep``/``remove`` take an id from the list. Returns what happened."""
    if not action:
        found = entries.entries()
        if not found:
            return t.FLAGGED_NONE
        lines = [t.FLAGGED_HEADER.format(n=len(found))]
        lines += [_describe(flagged) for flagged in found[:FLAGGED_SHOWN]]
        if len(found) > FLAGGED_SHOWN:
            lines.append(t.FLAGGED_MORE.format(n=len(found) - FLAGGED_SHOWN))
        return "\n".join(lines)
    if action not in ("keep", "remove") or not target:
        return t.FLAGGED_USAGE
    matches = entries.find(target)
    if not matches:
        return t.FLAGGED_NO_MATCH.format(id=target)
    if len({flagged.id for flagged in matches}) > 1:
        return t.FLAGGED_AMBIGUOUS.format(id=target, n=len(matches))
    for flagged in matches:  # the same entry in several files: decide every copy
        if action == "keep":
            entries.keep(flagged)
        else:
            entries.remove(flagged)
    done = t.FLAGGED_KEPT if action == "keep" else t.FLAGGED_REMOVED
    return done.format(id=matches[0].id, names=", ".join(f.name for f in matches))

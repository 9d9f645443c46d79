"""Reviewing staged writes to shared memory — shared by `/admin memory` and the CLI.

A write goes to the shared MEMORY.md, or to a chat's shared profile, which its header
names (``… in the shared profile of <key>``).

A listing shows each write under a header line that starts with ``#<id> ``; every line
of its text follows with ``INDENT`` in front, so nothing in the text can pass for
another header. Long texts are cut in the listing; ``show <id>`` (or the full listing)
shows them whole. ``approve all`` approves only the writes whose whole text a reviewer
was shown; the others need their id.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.access import AdminReply
from gateway.commands import _texts as t
from memory.store import MemoryStore, ProfileStore, StagedWrite, StagedWrites, make_visible

PENDING_SHOWN = 20
"""Staged writes listed at once; the rest after these are decided."""
LIST_CHARS = 300
"""Characters of a staged text shown in the listing (all of it with ``show <id>``)."""
INDENT = "  │ "
"""Every line of a staged text starts with this, so no line of it can look like a header
(the bar stays where a platform's Markdown drops leading spaces)."""
SHOW_IN_CHAT = "/admin memory show {id}"
_MARKUP = re.compile(r"([\\`*_~\[\]()<>|#!])")
"""Characters that start Markdown on the chat platforms; escaped with a backslash."""


def escape_markdown(line: str) -> str:
    """``line`` shown literally where the answer is read as Markdown (no bold, links, code)."""
    return _MARKUP.sub(r"\\\1", line)


def render(
    write: StagedWrite,
    *,
    limit: int | None = LIST_CHARS,
    show: str = SHOW_IN_CHAT,
    markdown: bool = True,
) -> str:
    """A write for a reviewer: a header line, then its text indented, hidden characters shown.

    With a ``limit``, a longer text is cut and the header says so (and how to see it all).
    With ``markdown`` (answers in chat) the text's own markup is escaped, shown as typed.
    """
    if write.action == "replace":
        parts = [(t.STAGED_OLD, write.old_text), (t.STAGED_NEW, write.content)]
    else:
        parts = [("", write.content if write.action == "add" else write.old_text)]
    visible = [(label, make_visible(text)) for label, text in parts]
    cut = limit is not None and any(len(text) > limit for _, text in visible)
    where = "" if write.profile is None else t.STAGED_IN_PROFILE.format(profile=write.profile)
    fields = {"id": write.id, "action": write.action, "user_key": write.user_key, "where": where}
    if cut:
        length = max(len(text) for _, text in parts)
        lines = [t.STAGED_CUT.format(**fields, length=length, show=show.format(id=write.id))]
    else:
        lines = [t.STAGED_HEADER.format(**fields)]
    for label, text in visible:
        indent = INDENT
        if label:
            lines.append(INDENT + label)
            indent = INDENT + "  "
        shown = text[:limit] if limit is not None and len(text) > limit else text
        quoted = shown.splitlines() or [""]
        if markdown:
            quoted = [escape_markdown(line) for line in quoted]
        lines += [indent + line for line in quoted]
        if shown != text:
            lines.append(indent + t.STAGED_MORE)
    return "\n".join(lines)


def is_whole(write: StagedWrite, limit: int | None = LIST_CHARS) -> bool:
    texts = (write.content, write.old_text)
    return limit is None or all(len(make_visible(text)) <= limit for text in texts)


def review(
    staging: StagedWrites,
    store: MemoryStore,
    action: str,
    target: str,
    by: str,
    *,
    show: str = SHOW_IN_CHAT,
    markdown: bool = True,
    profile_store: ProfileStore | None = None,
    on_approved: Callable[[StagedWrite], None] | None = None,
) -> AdminReply:
    """``pending [full]`` lists; ``show <id>`` shows one whole; ``approve``/``reject`` take an
    id or ``all``. ``show`` is how a reviewer asks for one write whole; ``markdown`` is
    False where the answer is printed as it is (the CLI). ``store`` holds MEMORY.md;
    ``profile_store`` gives the store of a shared profile a write changes;
    ``on_approved`` is told of each write that landed (for the memory providers). Returns
    what happened.

    The reply's outcome is ``ok``, ``not_found`` (no such pending write), ``failed``
    (an approved write the store refused: scan or limits), ``usage`` or ``invalid``.
    """
    if action == "pending":
        listing = _listing(staging, full=target.lower() == "full", show=show, markdown=markdown)
        return AdminReply(listing, ok=True)
    if action == "show":
        return _show(staging, target, markdown=markdown)
    if not target:
        return AdminReply(t.REVIEW_USAGE.format(action=action), ok=False, outcome="usage")
    chosen = _chosen(staging, action, target)
    if chosen is None:
        return AdminReply(t.NOT_AN_ID.format(target=target), ok=False, outcome="invalid")
    ids, skipped = chosen
    if not ids and not skipped:
        return AdminReply(t.NO_PENDING, ok=True)
    lines = []
    outcomes: set[str] = set()
    for staged_id in ids:
        write = staging.get(staged_id)
        if write is None or write.status != "pending":
            outcomes.add("not_found")
        if action == "approve":
            store.load_from_disk()
            done, line = staging.approve(staged_id, store, by, profile_store=profile_store)
            if done and write is not None and on_approved is not None:
                on_approved(write)
        else:
            done, line = staging.reject(staged_id, by)
        if not done and write is not None and write.status == "pending":
            outcomes.add("failed")  # the store refused the write: scan or limits
        lines.append(line)
    if skipped:
        listed = ", ".join(f"#{i}" for i in skipped)
        lines.append(t.NOT_SHOWN_WHOLE.format(ids=listed, show=show.format(id="ID")))
    outcome = next((o for o in ("failed", "not_found") if o in outcomes), "ok")
    return AdminReply("\n".join(lines), ok=outcome == "ok", outcome=outcome)


def _chosen(staging: StagedWrites, action: str, target: str) -> tuple[list[int], list[int]] | None:
    """The ids ``target`` names, and those ``all`` leaves out of an approval because their
    whole text was never shown; None when ``target`` is no id."""
    if target.lower() != "all":
        try:
            return [int(target.lstrip("#"))], []
        except ValueError:
            return None
    ids = [w.id for w in staging.pending()]
    if action != "approve":
        return ids, []
    shown = staging.shown()
    return [i for i in ids if i in shown], [i for i in ids if i not in shown]


def _listing(staging: StagedWrites, *, full: bool, show: str, markdown: bool) -> str:
    pending = staging.pending()
    if not pending:
        return t.NO_PENDING
    listed = pending[:PENDING_SHOWN]
    limit = None if full else LIST_CHARS
    lines = [t.PENDING_HEADER.format(n=len(pending))]
    lines += [render(w, limit=limit, show=show, markdown=markdown) for w in listed]
    if len(pending) > PENDING_SHOWN:
        lines.append(t.PENDING_MORE.format(n=len(pending) - PENDING_SHOWN))
    whole = [w.id for w in listed if is_whole(w, limit)]
    staging.mark_shown(whole)
    if len(whole) < len(listed):
        lines.append(t.APPROVE_ALL_HINT.format(show=show.format(id="ID")))
    return "\n".join(lines)


def _show(staging: StagedWrites, target: str, *, markdown: bool) -> AdminReply:
    if not target:
        return AdminReply(t.SHOW_USAGE, ok=False, outcome="usage")
    try:
        staged_id = int(target.lstrip("#"))
    except ValueError:
        return AdminReply(t.NOT_AN_ID.format(target=target), ok=False, outcome="invalid")
    write = staging.get(staged_id)
    if write is None or write.status != "pending":
        return AdminReply(t.NOT_PENDING.format(id=staged_id), ok=False, outcome="not_found")
    staging.mark_shown([write.id])
    return AdminReply(render(write, limit=None, markdown=markdown), ok=True)

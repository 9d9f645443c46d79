"""Bounded curated memory: the shared MEMORY.md and one user's USER.md.

Each file holds entries separated by a line containing only ``§``. The store
keeps two views of them:

* a frozen snapshot, rendered by :meth:`MemoryStore.load_from_disk` and served
  by :meth:`MemoryStore.format_for_system_prompt`; it never changes until the
  next ``load_from_disk()``, so the system prompt (and its prefix cache) stays
  stable for the whole session;
* live entries, changed by :meth:`add`, :meth:`replace` and :meth:`remove`,
  written to disk at once and returned in every tool result.

Where the entries are kept is a ``MemoryFiles``: a read, and an edit that
re-reads, changes and writes one file atomically. ``DiskMemoryFiles`` (the
default) re-reads the file under an exclusive lock on ``<file>.lock`` and
replaces it atomically, so writers in other processes never lose each other's
entries and readers never see a half-written file. Replicas on different
machines share no disk and no flock, so with ``database.url`` set the files
live in PostgreSQL (``PostgresMemoryFiles``), where a row lock held by one
transaction does the same job. The store above is the same for both.
Limits are counted in characters, which is the same for every tokenizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from memory.errors import MemoryStoreError
from memory.log_content import loggable
from memory.settings import DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT
from memory.store._disk_files import DiskMemoryFiles
from memory.store._files import ENTRY_DELIMITER, MemoryFiles
from memory.store._threats import scan_memory_content
from memory.store._withheld import (
    entry_id,
    kept_path,
    split_withheld,
    withheld_note,
)

logger = logging.getLogger(__name__)

TARGETS: tuple[str, ...] = ("memory", "user")
_DELIMITER_LINE = ENTRY_DELIMITER.strip("\n")
_PREVIEW_CHARS = 80
_SEPARATOR = "═" * 46


class MemoryResult(TypedDict):
    """What a write returns; JSON-serialisable, handed to the model as the tool result."""

    success: bool
    target: str
    message: str
    entries: list[str]
    usage: str


class _Refusal(Exception):
    """A change that cannot be applied; its message goes back to the model."""


# An edit gets the entries read under the lock and the checked content; it returns
# the new entries (None: nothing to write) and a message, or raises _Refusal.
_Edit = Callable[[list[str], str], tuple[list[str] | None, str]]


def _preview(entry: str) -> str:
    return entry if len(entry) <= _PREVIEW_CHARS else entry[:_PREVIEW_CHARS] + "..."


def _find_entry(entries: list[str], old_text: str) -> int:
    """Index of the one entry ``old_text`` identifies, else raise a refusal."""
    needle = old_text.strip()
    if not needle:
        raise _Refusal("old_text is empty: give a unique part of the entry to change.")
    exact = [i for i, entry in enumerate(entries) if entry == needle]
    if len(exact) == 1:
        return exact[0]
    matches = [i for i, entry in enumerate(entries) if needle in entry]
    if not matches:
        raise _Refusal(f"No entry contains {needle!r}.")
    if len({entries[i] for i in matches}) > 1:
        previews = "; ".join(repr(_preview(entries[i])) for i in matches)
        raise _Refusal(
            f"{len(matches)} entries contain {needle!r}: {previews}. "
            "Use a longer, unique part of the entry you mean."
        )
    return matches[0]  # identical copies of one entry: change the first


def _check_content(content: str) -> str:
    """Return the stripped content, or raise a refusal explaining what is wrong."""
    text = content.strip()
    if not text:
        raise _Refusal("Content is empty.")
    if _DELIMITER_LINE in text.split("\n"):
        raise _Refusal(
            f"Content contains a line with only {_DELIMITER_LINE!r}, "
            "which separates entries; write one entry at a time."
        )
    threat = scan_memory_content(text)
    if threat is not None:
        raise _Refusal(threat)
    return text


class MemoryStore:
    """The curated memory files of one conversation: shared MEMORY.md and one USER.md."""

    def __init__(
        self,
        memory_path: Path,
        user_path: Path,
        memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT,
        user_char_limit: int = DEFAULT_USER_CHAR_LIMIT,
        *,
        files: MemoryFiles | None = None,
    ) -> None:
        """``files`` is where the entries are kept; the default is the plain files on disk."""
        self.files: MemoryFiles = files if files is not None else DiskMemoryFiles()
        self.memory_path = memory_path
        self.user_path = user_path
        self.memory_char_limit = memory_char_limit
        self.user_char_limit = user_char_limit
        self.memory_entries: list[str] = []
        self.user_entries: list[str] = []
        self._snapshot: dict[str, str] = {"memory": "", "user": ""}
        self._kept: dict[str, set[str]] = {"memory": set(), "user": set()}

    # -- frozen snapshot -------------------------------------------------

    def load_from_disk(self) -> None:
        """Read both files into the live entries and retake the frozen snapshot.

        Entries that fail today's threat scan (and carry no admin's keep mark) are
        left out of the snapshot, one line standing in for them (see ``_flagged``).
        """
        self.memory_entries = self.files.read(self.memory_path)
        self.user_entries = self.files.read(self.user_path)
        self._snapshot = {}
        for target in TARGETS:
            entries = self._entries(target)
            # a file with no entries has no keep marks worth a read
            marks = self.files.read(kept_path(self._path(target))) if entries else []
            self._kept[target] = set(marks)
            shown, withheld = split_withheld(entries, self._kept[target])
            if withheld:
                logger.warning(
                    "%d %s entry(ies) withheld from the prompt: they fail the threat scan "
                    "(ids %s); an admin can keep or remove them (/admin memory flagged)",
                    len(withheld),
                    target,
                    ", ".join(entry_id(entry) for entry in withheld),
                )
                shown = [*shown, withheld_note(len(withheld))]
            self._snapshot[target] = self._render_block(target, entries, shown) if entries else ""

    def format_for_system_prompt(self, target: str) -> str | None:
        """The block frozen at the last ``load_from_disk()``; None if it had no entries."""
        return self._snapshot.get(target) or None

    def _render_block(self, target: str, entries: list[str], shown: list[str]) -> str:
        if target == "user":
            title = "USER PROFILE (who the user is)"
        else:
            title = "MEMORY (your personal notes)"
        header = f"{title} [{self._usage(target, entries)}]"
        return f"{_SEPARATOR}\n{header}\n{_SEPARATOR}\n{ENTRY_DELIMITER.join(shown)}"

    # -- live state ------------------------------------------------------

    def _path(self, target: str) -> Path:
        return self.user_path if target == "user" else self.memory_path

    def _limit(self, target: str) -> int:
        return self.user_char_limit if target == "user" else self.memory_char_limit

    def _entries(self, target: str) -> list[str]:
        return self.user_entries if target == "user" else self.memory_entries

    def _set_entries(self, target: str, entries: list[str]) -> None:
        if target == "user":
            self.user_entries = entries
        else:
            self.memory_entries = entries

    def _usage(self, target: str, entries: list[str]) -> str:
        limit = self._limit(target)
        current = len(ENTRY_DELIMITER.join(entries))
        pct = min(100, int(current / limit * 100)) if limit > 0 else 0
        return f"{pct}% — {current:,}/{limit:,} chars"

    def _result(self, target: str, success: bool, message: str) -> MemoryResult:
        known = target in TARGETS
        entries = list(self._entries(target)) if known else []
        usage = self._usage(target, entries) if known else ""
        shown, withheld = split_withheld(entries, self._kept[target]) if known else ([], [])
        if withheld:
            entries = [*shown, withheld_note(len(withheld))]
        return {
            "success": success,
            "target": target,
            "message": message,
            "entries": entries,
            "usage": usage,
        }

    def _check_limit(self, target: str, old: list[str], new: list[str], entry: str) -> None:
        limit = self._limit(target)
        size = len(ENTRY_DELIMITER.join(new))
        if size <= limit:
            return
        raise _Refusal(
            f"{target} is full: currently {self._usage(target, old)}; the new entry is "
            f"{len(entry):,} chars, which would make it {size:,}/{limit:,}. Nothing was "
            "saved. Consolidate first: replace or remove existing entries to make room, "
            "then try again with a shorter entry."
        )

    # -- writes ----------------------------------------------------------

    def add(self, target: str, content: str) -> MemoryResult:
        """Append an entry; an exact duplicate is a successful no-op."""

        def edit(entries: list[str], text: str) -> tuple[list[str] | None, str]:
            if text in entries:
                return None, "This entry already exists; nothing was added."
            new = [*entries, text]
            self._check_limit(target, entries, new, text)
            return new, "Entry added."

        return self._apply(target, "add", edit, content)

    def replace(self, target: str, old_text: str, content: str) -> MemoryResult:
        """Replace the one entry containing ``old_text`` with ``content``."""

        def edit(entries: list[str], text: str) -> tuple[list[str] | None, str]:
            index = _find_entry(entries, old_text)
            if entries[index] == text:
                return None, "The entry already has this content; nothing changed."
            if text in entries:
                raise _Refusal("The new content already exists as another entry; remove this one.")
            new = [*entries[:index], text, *entries[index + 1 :]]
            self._check_limit(target, entries, new, text)
            return new, "Entry replaced."

        return self._apply(target, "replace", edit, content)

    def remove(self, target: str, old_text: str) -> MemoryResult:
        """Remove the one entry containing ``old_text``."""

        def edit(entries: list[str], _text: str) -> tuple[list[str] | None, str]:
            index = _find_entry(entries, old_text)
            return [*entries[:index], *entries[index + 1 :]], "Entry removed."

        return self._apply(target, "remove", edit, None)

    def _apply(self, target: str, action: str, edit: _Edit, content: str | None) -> MemoryResult:
        """Check ``content``, run ``edit`` on the entries re-read under the lock, write."""
        if target not in TARGETS:
            return self._result(
                target, False, f"Unknown target {target!r}; use 'memory' or 'user'."
            )
        path = self._path(target)
        current: list[str] = []
        new: list[str] | None = None
        message = ""

        def change(entries: list[str]) -> list[str] | None:
            nonlocal current, new, message
            current = entries
            self._set_entries(target, entries)
            new, message = edit(entries, text)
            return new

        try:
            text = "" if content is None else _check_content(content)
            self._set_entries(target, self.files.edit(path, change))
        except _Refusal as refusal:
            return self._result(target, False, str(refusal))
        except OSError as exc:
            raise MemoryStoreError(f"cannot write memory file {path}") from exc
        if new is not None:
            logger.info("memory %s on %s, usage %s", action, target, self._usage(target, new))
            removed = [entry for entry in current if entry not in new]
            added = [entry for entry in new if entry not in current]
            logger.debug(
                "memory %s on %s: -%s +%s", action, target, loggable(removed), loggable(added)
            )
        return self._result(target, True, message)

"""What the provider keeps on disk per user: the turns of open sessions, and the warm recall.

Supermemory gets one memory per session, written when the session ends, so
the turns in between must survive a worker killed mid-session: each synced
turn is appended (and fsynced) to ``turns/<session>.jsonl`` in the user's
directory ``CHORUS_HOME/providers/supermemory/users/<platform>/<id>/`` (a
group chat's directory for a chat session; each line names its speaker).

At session end the file is renamed to ``<session>.pending.jsonl`` (atomic), so
the session's late writers cannot append to what is being ingested, and every
pending file of the user is ingested; a file is removed only once Supermemory
took it, so a failed ingest is tried again at the user's next session end.

A turn is named by a hash of its session, speaker and text: a re-delivered
``sync_turn`` finds it and appends nothing, and ``/undo`` removes it by its text.
``warm.json`` holds the recall ``queue_prefetch`` computed after the last turn.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TURNS = "turns"
PENDING = ".pending.jsonl"
OPEN = ".jsonl"
WARM = "warm.json"


@dataclass(frozen=True)
class Turn:
    turn: str
    session: str
    speaker: str
    user: str
    assistant: str


def turn_name(session: str, speaker: str, user: str, assistant: str) -> str:
    data = json.dumps([session, speaker, user, assistant], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def session_file(session: str) -> str:
    """A file name for ``session`` (any text) that is safe and unique."""
    return hashlib.sha256(session.encode("utf-8")).hexdigest()[:32]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _read(path: Path) -> list[Turn]:
    turns: list[Turn] = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                data: Any = json.loads(line)
                turns.append(Turn(**{k: str(data[k]) for k in Turn.__dataclass_fields__}))
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a crash mid-write
    return turns


class UserBuffer:
    """The buffered turns and warm recall of one user key (a person, or a chat)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.turns_dir = directory / TURNS

    def _open_path(self, session: str) -> Path:
        return self.turns_dir / f"{session_file(session)}{OPEN}"

    def turns(self, session: str) -> list[Turn]:
        return _read(self._open_path(session))

    def append(self, turn: Turn) -> bool:
        """Add ``turn`` to its session's file; False when it is already there."""
        path = self._open_path(turn.session)
        if any(t.turn == turn.turn for t in _read(path)):
            return False
        self.turns_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = json.dumps(turn.__dict__, ensure_ascii=False) + "\n"
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        return True

    def remove_last(self, session: str, user: str, assistant: str, speaker: str | None) -> bool:
        """Drop the latest turn of ``session`` with this text (and speaker, if known)."""
        path = self._open_path(session)
        turns = _read(path)
        for index in range(len(turns) - 1, -1, -1):
            turn = turns[index]
            if (turn.user, turn.assistant) == (user, assistant) and speaker in (None, turn.speaker):
                kept = turns[:index] + turns[index + 1 :]
                lines = (json.dumps(t.__dict__, ensure_ascii=False) + "\n" for t in kept)
                _write_atomic(path, "".join(lines))
                return True
        return False

    def close_session(self, session: str) -> None:
        """Mark ``session``'s turns as ready to ingest (nothing happens if it has none)."""
        path = self._open_path(session)
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, path.with_name(f"{session_file(session)}{PENDING}"))

    def pending(self) -> Iterator[tuple[Path, list[Turn]]]:
        """Each ended session's file with its turns, oldest first."""
        if not self.turns_dir.is_dir():
            return
        files = sorted(self.turns_dir.glob(f"*{PENDING}"), key=lambda p: p.stat().st_mtime)
        for path in files:
            yield path, _read(path)

    # -- warm recall ---------------------------------------------------------

    def store_warm(self, tag: str, text: str) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_atomic(
            self.directory / WARM, json.dumps({"tag": tag, "text": text, "at": time.time()})
        )

    def warm(self, tag: str, max_age: float) -> str:
        """The last warm recall for ``tag`` if at most ``max_age`` seconds old, else ``""``."""
        try:
            data = json.loads((self.directory / WARM).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ""
        if not isinstance(data, dict) or data.get("tag") != tag:
            return ""
        if time.time() - float(data.get("at", 0)) > max_age:
            return ""
        return str(data.get("text", ""))

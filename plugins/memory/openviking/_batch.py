"""The durable per-session batch of turns, and the crash markers of commits.

OpenViking learns from a whole session at once (``commit`` archives it and
extracts memories), so each turn ``sync_turn`` is given is appended, fsynced,
to a batch file in the speaker's own provider directory::

    CHORUS_HOME/providers/openviking/users/<platform>/<id>/batches/<session>.jsonl

A worker killed between turns loses nothing; a turn withdrawn by ``/undo``
before the commit is taken out of the batch again. At session end the batch is
*sealed*: under the directory's lock its messages are written (temp file,
fsync, rename) to a marker ``pending/<commit id>.json`` and the batch file is
removed. The marker is deleted only after the server acknowledged the
commit, so a commit interrupted by a crash or a dead server is found by the
next call (:meth:`Batches.markers`) and run again. The commit id is derived
from the owner, the session and the batch's first turn, so the retry reuses
the same OpenViking session and the server's own counters tell what already
arrived (see :mod:`._client`): nothing is added or committed twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.providers import provider_dir

from ._config import PROVIDER_NAME

Message = dict[str, str]


@dataclass(frozen=True)
class Marker:
    path: Path
    commit_id: str
    owner: str
    session_id: str
    messages: list[Message]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def turn_id(session_id: str, user: str, assistant: str) -> str:
    """A stable name for one turn's text in one session (a re-delivered job has the same)."""
    return _digest(session_id, user, assistant)[:32]


def _write_atomic(path: Path, data: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class Batches:
    def __init__(self, home: Path) -> None:
        self.home = home

    def _dir(self, owner: str) -> Path:
        return provider_dir(self.home, PROVIDER_NAME, owner)

    @contextlib.contextmanager
    def locked(self, owner: str) -> Iterator[Path]:
        directory = self._dir(owner)
        with open(directory / "batch.lock", "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield directory
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    @staticmethod
    def _batch_file(directory: Path, session_id: str) -> Path:
        return directory / "batches" / f"{_digest(session_id)[:32]}.jsonl"

    @staticmethod
    def _read(path: Path) -> list[dict[str, Any]]:
        if not path.is_file():
            return []
        entries = []
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):  # a line torn by a crash
                entry = json.loads(line)
                if isinstance(entry, dict) and isinstance(entry.get("messages"), list):
                    entries.append(entry)
        return entries

    def append(self, owner: str, session_id: str, turn: str, messages: list[Message]) -> bool:
        """Add one turn to the batch; False when that turn is already in it."""
        with self.locked(owner) as directory:
            path = self._batch_file(directory, session_id)
            if any(e.get("turn") == turn for e in self._read(path)):
                return False
            path.parent.mkdir(mode=0o700, exist_ok=True)
            line = json.dumps({"turn": turn, "messages": messages}, ensure_ascii=False)
            with open(path, "a", encoding="utf-8") as handle:
                if handle.tell() > 0:
                    handle.write("\n")
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            return True

    def withdraw(self, owner: str, session_id: str, turn: str) -> bool:
        """Drop the last entry of ``turn`` from the batch (``/undo``); False when it is not
        there (already sealed and committed, or never synced)."""
        with self.locked(owner) as directory:
            path = self._batch_file(directory, session_id)
            entries = self._read(path)
            for index in range(len(entries) - 1, -1, -1):
                if entries[index].get("turn") == turn:
                    del entries[index]
                    lines = (json.dumps(e, ensure_ascii=False) for e in entries)
                    _write_atomic(path, "\n".join(lines))
                    return True
            return False

    def seal(self, owner: str, session_id: str) -> Marker | None:
        """Turn the session's batch into a commit marker; None when there is nothing to commit."""
        with self.locked(owner) as directory:
            path = self._batch_file(directory, session_id)
            entries = self._read(path)
            if not entries:
                path.unlink(missing_ok=True)
                return None
            commit_id = "chorus-" + _digest(owner, session_id, str(entries[0]["turn"]))[:32]
            messages = [m for e in entries for m in e["messages"]]
            pending = directory / "pending"
            pending.mkdir(mode=0o700, exist_ok=True)
            marker = pending / f"{commit_id}.json"
            record = {
                "commit_id": commit_id,
                "owner": owner,
                "session_id": session_id,
                "messages": messages,
            }
            _write_atomic(marker, json.dumps(record, ensure_ascii=False))
            path.unlink()
            return Marker(marker, commit_id, owner, session_id, messages)

    def markers(self) -> list[Marker]:
        """Every unfinished commit under this home, oldest first."""
        root = self.home / "providers" / PROVIDER_NAME
        found: list[Marker] = []
        paths = sorted(root.glob("*/*/*/pending/*.json"), key=lambda p: p.stat().st_mtime)
        for path in paths:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                found.append(
                    Marker(
                        path,
                        str(data["commit_id"]),
                        str(data["owner"]),
                        str(data["session_id"]),
                        [dict(m) for m in data["messages"]],
                    )
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    @staticmethod
    def finish(marker: Marker) -> None:
        marker.path.unlink(missing_ok=True)

"""What the provider keeps beside each user's brv context tree: synced turns, warm recall.

Both live in the user's working directory (``CHORUS_HOME/providers/byterover/
users/<platform>/<id>/``), next to the ``.brv`` tree brv keeps there:

* ``chorus-synced.txt``: hashes of the turns already curated, so a job
  delivered twice curates its turn once (brv has no delete to undo a double);
* ``chorus-warm.json``: the answer ``queue_prefetch`` got after the last turn,
  which ``prefetch`` uses when brv is slower than the turn may wait.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

SYNCED = "chorus-synced.txt"
WARM = "chorus-warm.json"
MAX_SYNCED = 2000


def turn_hash(session: str, speaker: str, user: str, assistant: str) -> str:
    data = json.dumps([session, speaker, user, assistant], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _synced(directory: Path) -> list[str]:
    try:
        return (directory / SYNCED).read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return []


def was_synced(directory: Path, turn: str) -> bool:
    return turn in _synced(directory)


def mark_synced(directory: Path, turn: str) -> None:
    kept = [*_synced(directory), turn][-MAX_SYNCED:]
    _write_atomic(directory / SYNCED, "\n".join(kept) + "\n")


def store_warm(directory: Path, text: str) -> None:
    _write_atomic(directory / WARM, json.dumps({"text": text, "at": time.time()}))


def warm(directory: Path, max_age: float) -> str:
    """The last warm recall if at most ``max_age`` seconds old, else ``""``."""
    try:
        data = json.loads((directory / WARM).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(data, dict) or time.time() - float(data.get("at", 0)) > max_age:
        return ""
    return str(data.get("text", ""))

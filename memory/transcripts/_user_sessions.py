"""``UserSessions``: a view of the transcripts bound to one user (and their linked keys)."""

from __future__ import annotations

from typing import Protocol

from memory.errors import SessionDBError
from memory.transcripts._records import SearchHit, SessionRecord

__all__ = ["UserSessions"]


class _Transcripts(Protocol):
    """What the view asks of ``SessionDB``."""

    def search(
        self, user_key: str, query: str, limit: int = 10, exclude_session_id: str | None = None
    ) -> list[SearchHit]: ...

    def list_sessions(
        self, *, user_key: str | None = None, active_only: bool = False, limit: int = 50
    ) -> list[SessionRecord]: ...


class UserSessions:
    """The sessions of one user: every query made through it is bound to ``user_key``."""

    def __init__(self, db: _Transcripts, user_key: str, also: tuple[str, ...] = ()) -> None:
        if not user_key:
            raise SessionDBError("a per-user view needs a user key")
        self._db = db
        self._user_key = user_key
        self._keys = tuple(dict.fromkeys((user_key, *(k for k in also if k))))

    @property
    def user_key(self) -> str:
        return self._user_key

    def search(
        self, query: str, limit: int = 10, exclude_session_id: str | None = None
    ) -> list[SearchHit]:
        """Search this user's past messages (under each of its keys); see ``SessionDB.search``.

        Hits of several keys are ranked together, best first."""
        exclude = exclude_session_id
        hits = [hit for key in self._keys for hit in self._db.search(key, query, limit, exclude)]
        if len(self._keys) > 1:
            hits.sort(key=lambda hit: hit.rank)
        return hits[:limit]

    def list_sessions(self, limit: int = 50) -> list[SessionRecord]:
        """This user's sessions (under each of its keys), newest first."""
        found = [s for key in self._keys for s in self._db.list_sessions(user_key=key, limit=limit)]
        if len(self._keys) > 1:
            found.sort(key=lambda s: s.started_at, reverse=True)
        return found[:limit]

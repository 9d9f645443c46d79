"""``chorus sessions …``: transcripts as an operator sees them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gateway.cli._common import fail, out, settings, user_key, when
from gateway.config import Settings, database_location
from memory.errors import MemoryLayerError
from memory.transcripts import SessionDB, inspect_schema

sessions_app = typer.Typer(help="Inspect session transcripts.", no_args_is_help=True)


def _open_db(cfg: Settings) -> SessionDB | None:
    """The session database as it is (None if there is none yet): nothing is created here,
    and one of another schema version is not migrated."""
    where = database_location(cfg)
    try:
        state = inspect_schema(where)
        if state.found is None:
            return None
        if not state.current:
            raise fail(
                f"the session database has {state.describe()}; "
                "`chorus migrate` (or the gateway's next start) migrates it"
                if state.outdated
                else f"the session database has {state.describe()}"
            )
        return SessionDB(where)
    except MemoryLayerError as exc:
        raise fail(str(exc)) from None


@sessions_app.command("list")
def sessions_list(
    user: Annotated[str | None, typer.Option("--user", help="Only this PLATFORM:ID.")] = None,
    active: Annotated[bool, typer.Option("--active", help="Only sessions not ended.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
) -> None:
    """List sessions, newest first."""
    cfg = settings()
    key = user_key(user).key if user else None
    db = _open_db(cfg)
    if db is None:
        out.print("no sessions")
        return
    try:
        records = db.list_sessions(user_key=key, active_only=active, limit=limit)
    finally:
        db.close()
    if not records:
        out.print("no sessions")
        return
    table = Table("session", "user", "started", "messages", "ended")
    for rec in records:
        ended = rec.end_reason or "" if rec.ended_at else "active"
        table.add_row(rec.id, rec.user_key, when(rec.started_at), str(rec.message_count), ended)
    out.print(table)


@sessions_app.command("search")
def sessions_search(
    query: Annotated[str, typer.Argument(help="Words to look for.")],
    user: Annotated[str, typer.Option("--user", help="PLATFORM:ID whose sessions to search.")],
    limit: Annotated[int, typer.Option("--limit", min=1)] = 10,
) -> None:
    """Full-text search over one user's transcripts."""
    cfg = settings()
    ref = user_key(user)
    db = _open_db(cfg)
    if db is None:
        out.print("no matches")
        return
    try:
        hits = db.for_user(ref.key).search(query, limit=limit)
    finally:
        db.close()
    if not hits:
        out.print("no matches")
        return
    for hit in hits:
        out.print(f"{hit.date}  {hit.session_id}  {hit.role}: {hit.snippet}", markup=False)

"""``chorus users link|unlink``: accounts as one person, audited like ``/admin link|unlink``.

A running gateway's open sessions of the accounts keep the profile they started
with until they end; the next session loads the person's.
"""

from __future__ import annotations

import asyncio
import getpass
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gateway.access import AdminReply, GatewayDB
from gateway.cli._common import out
from gateway.cli._common import settings as _settings
from gateway.cli._users import users_app
from gateway.clock import SystemClock
from gateway.config import LiveSettings, database_location
from memory.paths import ChorusPaths, UserKey
from memory.people import PeopleStore
from memory.store import MemoryStore, memory_files_for

if TYPE_CHECKING:
    from gateway.commands import LinkDesk

__all__ = ["users_link", "users_unlink"]


Act = Callable[["LinkDesk", str], Coroutine[Any, Any, AdminReply]]


def _run(command: str, argument: str, act: Act) -> None:
    from gateway.app import provider_source
    from gateway.commands import LinkDesk, provider_merger

    cfg = _settings()
    actor = f"cli:{getpass.getuser()}"
    where = database_location(cfg)
    paths = ChorusPaths(cfg.home)
    files = memory_files_for(where, paths.memories_dir)

    def store(key: UserKey) -> MemoryStore:
        return MemoryStore(
            paths.memory_file,
            paths.user_file(key),
            memory_char_limit=cfg.memory.memory_char_limit,
            user_char_limit=cfg.memory.user_char_limit,
            files=files,
        )

    try:
        with GatewayDB(where) as db, PeopleStore(where) as people:
            desk = LinkDesk(
                people,
                salt=db.install_salt,
                clock=SystemClock(),
                stores=store,
                merge_memories=provider_merger(provider_source(LiveSettings(cfg)), cfg.home),
            )
            result: AdminReply = asyncio.run(act(desk, actor))
            db.audit(actor, f"users {command}", argument, result.outcome, time.time())
    finally:
        if files is not None:
            files.close()
    out.print(result, markup=False)
    if not result.ok:
        raise typer.Exit(1)


@users_app.command("link")
def users_link(
    first: Annotated[str, typer.Argument(help="PLATFORM:ID")],
    second: Annotated[str, typer.Argument(help="PLATFORM:ID")],
) -> None:
    """Make two accounts one person: one profile, one search, one budget (not more rights)."""
    _run("link", f"{first} {second}", lambda desk, actor: desk.admin_link(first, second, actor))


@users_app.command("unlink")
def users_unlink(account: Annotated[str, typer.Argument(help="PLATFORM:ID")]) -> None:
    """Make an account its own person again."""
    _run("unlink", account, lambda desk, actor: desk.admin_unlink(account, actor))

"""``chorus memory holographic …``: an operator's view of one user's facts.

``facts --user PLATFORM:ID`` lists them (newest first); ``forget --user
PLATFORM:ID FACT_ID`` removes one, ``--all`` every fact of that user (their
database file is deleted). Nothing here starts a session or needs the gateway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memory.errors import MemoryLayerError
from memory.providers import provider_dir

from . import _config
from ._store import FactStore

FACTS_FILE = "facts.db"

cli = typer.Typer(help="The holographic provider's facts, per user.", no_args_is_help=True)


def _home() -> Path:
    from os import environ

    return Path(environ.get("CHORUS_HOME") or "~/.chorus").expanduser().absolute()


def _path(user: str) -> Path:
    try:
        return provider_dir(_home(), _config.PROVIDER_NAME, user) / FACTS_FILE
    except MemoryLayerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


User = Annotated[str, typer.Option("--user", help="PLATFORM:ID whose facts these are.")]


@cli.command("facts")
def facts_command(
    user: User,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many, newest first.")] = 50,
) -> None:
    """List a user's facts: id, category, trust, text."""
    path = _path(user)
    if not path.exists():
        typer.echo(f"{user} has no facts")
        return
    store = FactStore(path, hrr=False)
    try:
        found = store.recent(None, limit)
        total = store.count()
    finally:
        store.close()
    for fact in found:
        typer.echo(f"{fact.id:>5}  {fact.category:<10}  {fact.trust:.2f}  {fact.content}")
    typer.echo(f"{total} fact(s) in all")


@cli.command("forget")
def forget_command(
    user: User,
    fact_id: Annotated[int | None, typer.Argument(help="The fact to remove.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Remove every fact of the user.")] = False,
) -> None:
    """Remove one fact of a user, or all of them."""
    if (fact_id is None) == (not every):
        typer.echo("error: give a FACT_ID or --all", err=True)
        raise typer.Exit(1)
    path = _path(user)
    if every:
        removed = [p for p in path.parent.glob(f"{FACTS_FILE}*") if p.is_file()]
        for file in removed:
            file.unlink()
        typer.echo(f"forgot every fact of {user}" if removed else f"{user} has no facts")
        return
    store = FactStore(path, hrr=False)
    try:
        gone = path.exists() and store.remove(int(fact_id or 0))
    finally:
        store.close()
    if not gone:
        typer.echo(f"error: {user} has no fact {fact_id}", err=True)
        raise typer.Exit(1)
    typer.echo(f"forgot fact {fact_id} of {user}")

"""``chorus users …``: pairing approval and access lists, audited like the admin commands."""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gateway.access import Authorizer, GatewayDB, PairingRequests, RequestStatus
from gateway.cli._common import out
from gateway.cli._common import settings as _settings
from gateway.clock import SystemClock
from gateway.config import database_location

users_app = typer.Typer(help="Who may talk to the bot.", no_args_is_help=True)


def _authorize(command: str, argument: str, act: Callable[[Authorizer, str], str]) -> None:
    cfg = _settings()
    actor = f"cli:{getpass.getuser()}"
    where = database_location(cfg)
    with GatewayDB(where) as db:
        auth = Authorizer(cfg.auth, db, SystemClock())
        result = act(auth, actor)
        outcome = getattr(result, "outcome", "ok")
        db.audit(actor, f"users {command}", argument, outcome, time.time())
    subject = getattr(result, "subject", None)
    if outcome == "ok" and subject:  # their pairing request is decided: a later press says so
        with PairingRequests(where) as requests:
            status: RequestStatus = "denied" if command == "deny" else "approved"
            requests.settle_user(subject, status, actor, time.time())
    out.print(result, markup=False)
    if outcome != "ok":
        raise typer.Exit(1)


@users_app.command("approve")
def users_approve(
    code: Annotated[str, typer.Argument(help="The pairing code a user got.")],
) -> None:
    """Approve a pairing code (the same as /admin approve in a chat)."""
    _authorize("approve", "<code>", lambda auth, actor: auth.approve_code(code, actor))


@users_app.command("allow")
def users_allow(user: Annotated[str, typer.Argument(help="PLATFORM:ID")]) -> None:
    """Let a user talk to the bot."""
    _authorize("allow", user, lambda auth, actor: auth.allow(user, actor))


@users_app.command("deny")
def users_deny(user: Annotated[str, typer.Argument(help="PLATFORM:ID")]) -> None:
    """Stop a user from talking to the bot (admins from the config cannot be denied)."""
    _authorize("deny", user, lambda auth, actor: auth.deny(user, actor))


@users_app.command("list")
def users_list() -> None:
    """Admins, allowed and denied users, and where each decision came from."""
    cfg = _settings()
    with GatewayDB(database_location(cfg)) as db:
        rows = Authorizer(cfg.auth, db, SystemClock()).users()
    if not rows:
        out.print("no users configured or approved")
        return
    table = Table("user", "state", "source", "by")
    for row in rows:
        table.add_row(row.user_key, row.state, row.source, row.by or "")
    out.print(table)


@users_app.command("erase")
def users_erase(
    person: Annotated[str, typer.Argument(help="PLATFORM:ID of the person to erase.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Erase everything chorus holds of a person (with their linked accounts); prints a receipt."""
    from gateway.commands.erasure import erase
    from memory.paths import UserKey

    try:
        key = UserKey.parse(person).key
    except ValueError as exc:
        out.print(f"not a user: {exc}", markup=False)
        raise typer.Exit(2) from None
    if not yes and not typer.confirm(f"Erase everything chorus holds of {key}?"):
        raise typer.Exit(1)
    receipt = erase(_settings(), key, f"cli:{getpass.getuser()}")
    out.print(receipt.text(), markup=False)
    if not receipt.complete:
        raise typer.Exit(1)


@users_app.command("export")
def users_export(
    person: Annotated[str, typer.Argument(help="PLATFORM:ID of the person to export.")],
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Where to write the zip (default: ./chorus-export-<platform>-<id>.zip)."
        ),
    ] = None,
) -> None:
    """Write everything chorus holds of a person (with their linked accounts) to one zip."""
    from gateway.commands.erasure import export
    from memory.paths import UserKey

    try:
        user = UserKey.parse(person)
    except ValueError as exc:
        out.print(f"not a user: {exc}", markup=False)
        raise typer.Exit(2) from None
    target = out_file or Path(f"chorus-export-{user.platform}-{user.id}.zip")
    archive = export(_settings(), user.key, f"cli:{getpass.getuser()}")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(archive)
    out.print(f"wrote {target} ({len(archive):,} bytes)", markup=False)

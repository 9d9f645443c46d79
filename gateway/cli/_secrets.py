"""``chorus secrets …``: each person's own credentials for tools, set by an admin.

The value is read from stdin (or typed without echo at a terminal), never taken
as an argument: arguments end up in shell histories and process lists. Every
change is audited like ``/admin`` commands (never the value).
"""

from __future__ import annotations

import getpass
import sys
import time
from typing import Annotated

import typer

from gateway.access import GatewayDB
from gateway.cli._common import fail, out, user_key
from gateway.cli._common import settings as _settings
from gateway.config import database_location
from gateway.errors import GatewayError
from memory.errors import SecretStoreError
from memory.secrets import SecretStore, new_key_text, valid_name

secrets_app = typer.Typer(help="Each person's own credentials for tools.", no_args_is_help=True)

PersonArg = Annotated[str, typer.Argument(help="PLATFORM:ID, e.g. telegram:12345")]
NameArg = Annotated[str, typer.Argument(help="The secret's name, e.g. GITHUB_TOKEN")]


def _store() -> SecretStore:
    from gateway.commands import open_secret_store

    try:
        return open_secret_store(_settings())
    except (GatewayError, SecretStoreError) as exc:
        raise fail(str(exc), 2) from None


def _audit(command: str, argument: str) -> None:
    actor = f"cli:{getpass.getuser()}"
    with GatewayDB(database_location(_settings())) as db:
        db.audit(actor, f"secrets {command}", argument, "ok", time.time())


def _read_value(name: str) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"value of {name} (not shown): ")
    return sys.stdin.read()


@secrets_app.command("set")
def secrets_set(person: PersonArg, name: NameArg) -> None:
    """Store NAME for PERSON; the value is read from stdin."""
    who = str(user_key(person))
    if not valid_name(name):
        raise fail(f"{name!r} is not a secret name: capital letters, digits and _ (GITHUB_TOKEN)")
    with _store() as store:
        if not store.has_key:
            raise fail("CHORUS_SECRET_KEY is not set: no secret is stored without it", 2)
        value = _read_value(name).strip()
        if not value:
            raise fail("no value on stdin: nothing was stored")
        try:
            store.set(who, name, value, time.time())
        except SecretStoreError as exc:
            raise fail(str(exc)) from None
    _audit("set", f"{who} {name}")
    out.print(f"stored {name} for {who}", markup=False)


@secrets_app.command("list")
def secrets_list(person: PersonArg) -> None:
    """The names of PERSON's secrets (never their values)."""
    who = str(user_key(person))
    with _store() as store:
        names = store.names(who)
    if not names:
        out.print(f"{who} has no secrets", markup=False)
        return
    for name in names:
        out.print(name, markup=False)


@secrets_app.command("delete")
def secrets_delete(person: PersonArg, name: NameArg) -> None:
    """Forget PERSON's secret NAME."""
    who = str(user_key(person))
    with _store() as store:
        gone = store.delete(who, name)
    if not gone:
        raise fail(f"{who} has no secret named {name}")
    _audit("delete", f"{who} {name}")
    out.print(f"deleted {name} of {who}", markup=False)


@secrets_app.command("key")
def secrets_key() -> None:
    """Print a new random key for CHORUS_SECRET_KEY (put it in CHORUS_HOME/.env)."""
    typer.echo(new_key_text())

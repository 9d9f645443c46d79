"""``chorus memory …``: the curated files, staged shared writes, installed providers."""

from __future__ import annotations

import getpass
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.table import Table

from gateway.access import GatewayDB
from gateway.cli._common import fail, out, settings, user_key
from gateway.cli._provider_setup import memory_setup_command, memory_status_command
from gateway.config import LiveSettings, Settings, database_location, load_settings
from memory.errors import MemoryStoreError
from memory.paths import ChorusPaths, UserKey
from memory.store import (
    FlaggedEntries,
    MemoryStore,
    ProfileStore,
    StagedWrite,
    StagedWrites,
    memory_files_for,
)
from plugins.memory import discover_memory_providers, provider_cli

logger = logging.getLogger(__name__)

memory_app = typer.Typer(
    help="Curated memory files, staged shared writes, memory providers.", no_args_is_help=True
)
memory_app.command("setup")(memory_setup_command)
memory_app.command("status")(memory_status_command)


def add_provider_commands(app: typer.Typer) -> None:
    """``chorus memory <name> …``: the active provider's own commands, if it has any.

    Never breaks the CLI: bad settings or a provider that fails to import only
    leave its commands out (``chorus memory status`` says why).
    """
    try:
        cfg = load_settings(create_home=False)
        name = cfg.memory.provider
        group = provider_cli(name, cfg.home) if name else None
    except Exception as exc:
        logger.debug("memory provider commands left out: %s", type(exc).__name__)
        return
    taken = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    if group is not None and name not in taken:
        app.add_typer(group, name=name)


@contextmanager
def _store(cfg: Settings, user: UserKey | None) -> Iterator[MemoryStore]:
    """The store the gateway would use: the files on disk, or PostgreSQL with ``database.url``.

    The PostgreSQL backend holds a pool, so the store is only lent for the block.
    """
    paths = ChorusPaths(cfg.home)
    try:
        files = memory_files_for(database_location(cfg), paths.memories_dir)
    except MemoryStoreError as exc:
        raise fail(str(exc)) from None
    try:
        yield MemoryStore(
            paths.memory_file,
            paths.user_file(user) if user is not None else paths.no_user_file,
            memory_char_limit=cfg.memory.memory_char_limit,
            user_char_limit=cfg.memory.user_char_limit,
            files=files,
        )
    finally:
        if files is not None:
            files.close()


@memory_app.command("show")
def memory_show(
    user: Annotated[
        str | None,
        typer.Option("--user", help="PLATFORM:ID — show that user's USER.md instead."),
    ] = None,
) -> None:
    """Print the shared MEMORY.md, or one user's USER.md, with usage."""
    cfg = settings()
    ref = user_key(user) if user else None
    with _store(cfg, ref) as store:
        store.load_from_disk()
    target = "user" if ref else "memory"
    label = f"USER.md of {ref}" if ref else "MEMORY.md (shared)"
    block = store.format_for_system_prompt(target)
    if block is None:
        out.print(f"{label}: empty")
        return
    out.print(block, markup=False)


@memory_app.command("providers")
def providers_command(
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="Load each provider to ask if available.")
    ] = True,
) -> None:
    """List memory providers: name, description, available, active."""
    cfg = settings()
    infos = discover_memory_providers(cfg.home, cfg.memory.provider, check_available=check)
    if not infos:
        out.print("no memory providers installed (built-in memory only)")
    else:
        table = Table("name", "description", "source", "available", "active")
        for info in infos:
            available = "?" if info.available is None else ("yes" if info.available else "no")
            if info.error:
                available += f" ({info.error})"
            table.add_row(
                info.name, info.description, info.source, available, "yes" if info.active else ""
            )
        out.print(table)
    if cfg.memory.provider and cfg.memory.provider not in {i.name for i in infos}:
        out.print(f"configured provider {cfg.memory.provider!r} is not installed", markup=False)
        raise typer.Exit(1)


SHOW_IN_CLI = "chorus memory pending --full"


def _profiles(cfg: Settings, shared: MemoryStore) -> ProfileStore:
    """The stores of the shared profiles staged writes change, kept where ``shared`` keeps
    MEMORY.md."""
    paths = ChorusPaths(cfg.home)

    def profile_store(key: str) -> MemoryStore:
        return MemoryStore(
            paths.memory_file,
            paths.user_file(UserKey.parse(key)),
            memory_char_limit=cfg.memory.memory_char_limit,
            user_char_limit=cfg.memory.user_char_limit,
            files=shared.files,
        )

    return profile_store


def _review(action: str, target: str) -> None:
    from gateway.commands import review

    cfg = settings()
    staging = StagedWrites(database_location(cfg))
    actor = f"cli:{getpass.getuser()}"
    approved: list[StagedWrite] = []
    try:
        with _store(cfg, None) as store:
            reply = review(
                staging,
                store,
                action,
                target,
                actor,
                show=SHOW_IN_CLI,
                markdown=False,
                profile_store=_profiles(cfg, store),
                on_approved=approved.append,
            )
            out.print(reply, markup=False)
        if approved:
            _tell_providers(cfg, approved)
        if action != "pending":
            with GatewayDB(database_location(cfg)) as db:
                db.audit(actor, f"memory {action}", target, reply.outcome, time.time())
    finally:
        staging.close()


def _tell_providers(cfg: Settings, approved: list[StagedWrite]) -> None:
    """The approved writes reach their sessions' memory providers (the ``approved_write``
    job, run here: the process that approved them)."""
    from agent import jobs
    from gateway.app import job_context

    jobs.configure(job_context(LiveSettings(cfg)))
    try:
        for write in approved:
            try:
                jobs.approved_write(write.session_id, write.id)
            except Exception as exc:  # the write is approved either way
                logger.warning(
                    "approved write #%s did not reach the memory provider: %s",
                    write.id,
                    type(exc).__name__,
                )
                out.print(f"#{write.id}: the memory provider was not told ({type(exc).__name__})")
    finally:
        jobs.shutdown()


@memory_app.command("pending")
def memory_pending_command(
    full: Annotated[
        bool, typer.Option("--full", help="Show each staged text whole, however long.")
    ] = False,
) -> None:
    """List writes to shared memory (MEMORY.md, groups' profiles) waiting for review (long
    texts cut unless --full)."""
    _review("pending", "full" if full else "")


@memory_app.command("approve")
def memory_approve_command(
    target: Annotated[str, typer.Argument(help="A staged write's id, or all.")],
) -> None:
    """Approve staged writes (threat scan and limits run again against the file now)."""
    _review("approve", target)


@memory_app.command("reject")
def memory_reject_command(
    target: Annotated[str, typer.Argument(help="A staged write's id, or all.")],
) -> None:
    """Reject staged writes."""
    _review("reject", target)


@memory_app.command("flagged")
def memory_flagged_command(
    action: Annotated[str | None, typer.Argument(help="keep or remove; leave out to list.")] = None,
    entry: Annotated[str | None, typer.Argument(help="A flagged entry's id.")] = None,
) -> None:
    """List entries that fail the threat scan (withheld from the prompt); keep or remove one."""
    from gateway.commands import flagged_command

    cfg = settings()
    with _store(cfg, None) as store:
        entries = FlaggedEntries(store.files, store.memory_path.parent)
        out.print(flagged_command(entries, action or "", entry or ""), markup=False)
    if action:
        actor = f"cli:{getpass.getuser()}"
        with GatewayDB(database_location(cfg)) as db:
            db.audit(actor, f"memory flagged {action}", entry or "", "ok", time.time())


add_provider_commands(memory_app)

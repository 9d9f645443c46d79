"""What every ``chorus`` command shares: settings loading, one-line errors, output."""

from __future__ import annotations

from datetime import UTC, datetime

import typer
from rich.console import Console

from gateway.config import Settings, load_settings
from gateway.errors import GatewayError
from memory.errors import MemoryLayerError
from memory.paths import UserKey

out = Console(highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one clear line to stderr; ``raise fail(...)`` exits with ``code``."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def settings() -> Settings:
    """The settings, or exit 2 with the configuration error on one line."""
    try:
        return load_settings()
    except GatewayError as exc:
        raise fail(str(exc), 2) from None


def user_key(text: str) -> UserKey:
    """``PLATFORM:ID`` from the command line, or exit 1 saying what is wrong."""
    try:
        return UserKey.parse(text)
    except MemoryLayerError as exc:
        raise fail(str(exc)) from None


def when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")

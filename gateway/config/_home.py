"""CHORUS_HOME: where it is, made if missing, and refused when others may read it or this
uid cannot write it (each refusal one line that names the fix)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gateway.errors import ConfigError


def resolve_home(environ: Mapping[str, str] | None = None) -> Path:
    """``CHORUS_HOME`` or ``~/.chorus``, made absolute."""
    env = os.environ if environ is None else environ
    raw = env.get("CHORUS_HOME") or "~/.chorus"
    return Path(raw).expanduser().absolute()


def ensure_home(home: Path) -> Path:
    """Create CHORUS_HOME with mode 0700 if missing; refuse a path that is not a directory."""
    if home.exists() and not home.is_dir():
        raise ConfigError(f"CHORUS_HOME {home} exists but is not a directory")
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create CHORUS_HOME {home}: {exc.strerror}") from exc
    if not os.access(home, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise ConfigError(unwritable_home(home))
    return home


def unwritable_home(home: Path) -> str:
    """Which uid cannot write CHORUS_HOME, whose it is, and how to fix it, on one line."""
    uid = os.geteuid()
    fix = f"chown -R {uid} {home}"
    try:
        info = home.stat()
        owner = f"owned by uid {info.st_uid}, mode {info.st_mode & 0o777:o}"
        if info.st_uid == uid:
            fix = f"chmod 700 {home}"
    except OSError as exc:
        owner = exc.strerror or "cannot stat"
    return (
        f"uid {uid} cannot write CHORUS_HOME {home} ({owner}); run: {fix} "
        f"(in a container: give the volume to uid {uid}, e.g. k8s fsGroup), "
        f"or set CHORUS_HOME to a directory uid {uid} can write"
    )


def require_private_home(home: Path) -> None:
    """Refuse a CHORUS_HOME that other users can read or enter: it holds every transcript."""
    try:
        mode = home.stat().st_mode & 0o777
    except OSError as exc:
        raise ConfigError(f"cannot read CHORUS_HOME {home}: {exc.strerror}") from exc
    if mode & 0o077:
        raise ConfigError(
            f"CHORUS_HOME {home} is mode {mode:o}, so other users could read every transcript "
            f"and profile in it; run: chmod 700 {home}"
        )

"""A person's files under a provider's directory: erased whole on request."""

from __future__ import annotations

import shutil
from pathlib import Path

from memory.providers import provider_dir

__all__ = ["erase_user_dir", "user_files"]


def user_files(chorus_home: Path, name: str, user_key: str) -> list[Path]:
    """Every file provider ``name`` keeps for ``user_key`` (none when it kept nothing)."""
    directory = provider_dir(chorus_home, name, user_key)
    return sorted(p for p in directory.rglob("*") if p.is_file())


def erase_user_dir(chorus_home: Path, name: str, user_key: str) -> int:
    """Remove provider ``name``'s directory of ``user_key``; how many files went."""
    directory = provider_dir(chorus_home, name, user_key)
    count = sum(1 for p in directory.rglob("*") if p.is_file())
    shutil.rmtree(directory, ignore_errors=False)
    return count

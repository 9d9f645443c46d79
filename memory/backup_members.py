"""Which members of a backup archive ``chorus restore`` writes, checked before any is.

A backup is data: the memory files (``memories/…``), ``state.db`` and the memory
providers' own data (``providers/…``). Those are restored. ``config.yaml`` and
``plugins/`` decide who administers the bot and what code runs, so they are
restored only when the operator names them (``include``); ``.env`` never is
(``chorus backup`` never writes it). Anything else in the archive is left out
and named in the summary.

Every member is checked before anything is written, so a refused archive
leaves the home as it was: a link, a device, an absolute path or one with
``..`` is refused, as is a member bigger than the manifest says it was, bigger
than a sane cap for its kind, or an archive that would unpack to far more than
its own size (a small archive holding hundreds of megabytes of zeros) or than
the disk has free.
"""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

INCLUDABLE = ("config.yaml", "plugins")
"""What a restore writes only when named (``chorus restore --include …``)."""

NEVER_RESTORED = frozenset({".env"})

MiB = 1024 * 1024
MEMBER_CAPS: tuple[tuple[str, int], ...] = (
    ("memories", 4 * MiB),
    ("providers", 1024 * MiB),
    ("plugins", 16 * MiB),
    ("config.yaml", 1 * MiB),
)
"""The largest member of each kind restored (by its first path part); ``state.db``
is bounded by the expansion limit and the free disk space only."""

MAX_EXPANSION = 200
"""How many times its own size an archive may unpack to (plus ``EXPANSION_FLOOR``)."""
EXPANSION_FLOOR = 16 * MiB


class MemberRefused(Exception):
    """The archive cannot be restored; the message says which member and why."""


@dataclass(frozen=True)
class RestorePlan:
    """The members to write, in archive order, and the names left out."""

    members: list[tarfile.TarInfo] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(m.size for m in self.members)


def check_includes(include: frozenset[str]) -> None:
    """Refuse an ``include`` naming anything but ``config.yaml`` and ``plugins``."""
    for name in sorted(include):
        if name in NEVER_RESTORED:
            raise MemberRefused(f"{name} is never restored: put the secrets back by hand")
        if name not in INCLUDABLE:
            raise MemberRefused(f"--include takes {' or '.join(INCLUDABLE)}, not {name!r}")


def _kind(relative: PurePosixPath) -> str:
    return relative.parts[0]


def _restored(relative: PurePosixPath, include: frozenset[str]) -> bool:
    kind = _kind(relative)
    if relative.name in NEVER_RESTORED or kind in NEVER_RESTORED:
        return False
    if relative.as_posix() == "state.db":
        return True
    if kind in ("memories", "providers") and len(relative.parts) > 1:
        return True
    if kind == "config.yaml" and len(relative.parts) == 1:
        return "config.yaml" in include
    return kind == "plugins" and len(relative.parts) > 1 and "plugins" in include


def _declared_sizes(manifest: Mapping[str, object]) -> dict[str, int] | None:
    sizes = manifest.get("sizes")
    if sizes is None:
        return None  # a backup made before the manifest listed sizes
    if not isinstance(sizes, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in sizes.items()
    ):
        raise MemberRefused("the backup's manifest lists its sizes wrongly")
    return sizes


def plan_restore(
    archive: tarfile.TarFile,
    manifest: Mapping[str, object],
    *,
    manifest_name: str,
    archive_size: int,
    home: Path,
    include: frozenset[str],
) -> RestorePlan:
    """Check every member of ``archive``; the members to write, or ``MemberRefused``."""
    declared = _declared_sizes(manifest)
    plan = RestorePlan()
    for member in archive.getmembers():
        if member.name == manifest_name or member.isdir():
            continue
        relative = PurePosixPath(member.name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise MemberRefused(f"the backup holds an unsafe path: {member.name!r}")
        if not member.isfile():  # a symbolic or hard link, a device, a pipe
            raise MemberRefused(f"the backup holds a link or special file: {member.name!r}")
        if not _restored(relative, include):
            plan.left_out.append(relative.as_posix())
            continue
        _check_size(member, relative, declared)
        plan.members.append(member)
    limit = archive_size * MAX_EXPANSION + EXPANSION_FLOOR
    if plan.total > limit:
        raise MemberRefused(
            f"the backup would unpack to {plan.total} bytes from an archive of "
            f"{archive_size}: more than a chorus backup does ({limit} at most)"
        )
    if declared is not None and plan.total > sum(declared.values()):
        raise MemberRefused("the backup holds more bytes than its manifest lists")
    free = shutil.disk_usage(_existing(home)).free
    if plan.total > free:
        raise MemberRefused(
            f"the backup needs {plan.total} bytes and only {free} are free under {home}"
        )
    return plan


def _check_size(
    member: tarfile.TarInfo, relative: PurePosixPath, declared: dict[str, int] | None
) -> None:
    name = relative.as_posix()
    if declared is not None:
        if name not in declared:
            raise MemberRefused(f"{name} is in the backup but not in its manifest")
        if member.size > declared[name]:
            raise MemberRefused(
                f"{name} is {member.size} bytes; the backup's manifest says {declared[name]}"
            )
    cap = dict(MEMBER_CAPS).get(_kind(relative))
    if cap is not None and member.size > cap:
        raise MemberRefused(
            f"{name} is {member.size} bytes, more than a restore takes for it ({cap})"
        )


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path

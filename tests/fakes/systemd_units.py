"""systemd units read the way systemd reads them, and run under podman as they would run.

There is no systemd as PID 1 in a podman container here, so a service is started the
way its unit says, with what podman can give it: ``User=``/``Group=``, ``Environment=``
(and ``EnvironmentFile=``'s lines), ``WorkingDirectory=``, ``ExecStart=`` run directly,
``ProtectSystem=strict`` as a read-only root with only ``ReadWritePaths=`` writable,
``StateDirectory=`` as another writable directory, ``PrivateTmp=`` as a fresh ``/tmp``,
``ProtectHome=`` as empty read-only ``/home`` and ``/root``, ``CapabilityBoundingSet=``
(empty) as no capabilities, ``NoNewPrivileges=``, ``UMask=``, and one seccomp filter
made of ``SystemCallFilter=``, ``SystemCallErrorNumber=``, ``SystemCallArchitectures=native``,
``MemoryDenyWriteExecute=`` and ``RestrictAddressFamilies=`` with the same rules
systemd loads (the system call groups are the ones this machine's ``systemd-analyze
syscall-filter`` lists). Not given: the ``Protect{Kernel*,Clock,Hostname,Proc}``,
``PrivateDevices=`` and ``Restrict{Namespaces,Realtime,SUIDSGID}`` mounts and filters
(podman's own masks of /proc and /sys and its small /dev come close), and
``RestrictAddressFamilies=`` answers EPERM instead of EAFNOSUPPORT.
"""

from __future__ import annotations

import errno
import json
import platform
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

ANALYZE_MISSING = "systemd-analyze is missing: ./scripts/test installs it (apt-get install systemd)"


def analyze() -> str:
    """The path of ``systemd-analyze``; fails with how to get it when it is missing."""
    binary = shutil.which("systemd-analyze")
    assert binary, ANALYZE_MISSING
    return binary


def service_settings(path: Path) -> list[tuple[str, str]]:
    """Every ``Key=value`` of the unit's ``[Service]`` section, in order, repeats kept."""
    settings: list[tuple[str, str]] = []
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service":
            key, _, value = line.partition("=")
            settings.append((key.strip(), value.strip()))
    return settings


def last(settings: Iterable[tuple[str, str]], key: str, default: str = "") -> str:
    found = [value for name, value in settings if name == key]
    return found[-1] if found else default


def every(settings: Iterable[tuple[str, str]], key: str) -> list[str]:
    """The words of all ``key=`` lines; an empty assignment resets the list, as in systemd."""
    words: list[str] = []
    for name, value in settings:
        if name == key:
            words = words + value.split() if value else []
    return words


def exposure(unit: Path) -> float:
    """The overall exposure ``systemd-analyze security --offline=yes`` gives the unit file."""
    done = subprocess.run(
        [analyze(), "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", done.stdout)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return float(found.group(1))


def syscall_groups() -> dict[str, list[str]]:
    """``@group`` → its members (system calls and other groups), from systemd-analyze."""
    listing = subprocess.run(
        [analyze(), "syscall-filter", "--no-pager"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    groups: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in listing.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.split()[0], [])
        elif current is not None and line.strip() and not line.lstrip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(names: Iterable[str], groups: dict[str, list[str]]) -> set[str]:
    calls: set[str] = set()
    for name in names:
        if name.startswith("@"):
            calls |= expand(groups[name], groups)
        else:
            calls.add(name)
    return calls


PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000
FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
ARCHES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


def _masked(index: int, mask: int, value: int) -> dict[str, object]:
    return {"index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"}


def seccomp_profile(settings: list[tuple[str, str]]) -> dict[str, object]:
    """The unit's system call rules as a podman seccomp profile (an allow list)."""
    groups = syscall_groups()
    allowed: set[str] = set()
    for name, value in settings:
        if name != "SystemCallFilter":
            continue
        if value.startswith("~"):
            allowed -= expand(value[1:].split(), groups)
        else:  # an allow list always holds @default (systemd adds it)
            allowed |= expand([*value.split(), "@default"], groups)
    assert allowed, "the unit has no SystemCallFilter= allow list"
    rules: list[dict[str, object]] = []
    if last(settings, "MemoryDenyWriteExecute") in ("true", "yes"):
        # systemd refuses mmap(PROT_WRITE|PROT_EXEC), mprotect/pkey_mprotect(PROT_EXEC)
        # and shmat(SHM_EXEC); everything else about them is allowed
        special = {"mmap", "mprotect", "pkey_mprotect", "shmat"}
        allowed -= special
        wx = PROT_WRITE | PROT_EXEC
        rules += [
            {"names": ["mmap"], "action": "SCMP_ACT_ALLOW", "args": [_masked(2, wx, v)]}
            for v in (0, PROT_WRITE, PROT_EXEC)
        ]
        rules += [
            {"names": [call], "action": "SCMP_ACT_ALLOW", "args": [_masked(2, PROT_EXEC, 0)]}
            for call in ("mprotect", "pkey_mprotect")
        ]
        rules.append(
            {"names": ["shmat"], "action": "SCMP_ACT_ALLOW", "args": [_masked(2, SHM_EXEC, 0)]}
        )
    families = every(settings, "RestrictAddressFamilies")
    if families and "socket" in allowed:
        allowed.discard("socket")
        rules += [
            {
                "names": ["socket"],
                "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": FAMILIES[f], "op": "SCMP_CMP_EQ"}],
            }
            for f in families
        ]
    error = last(settings, "SystemCallErrorNumber")
    profile: dict[str, object] = {
        "defaultAction": "SCMP_ACT_ERRNO" if error else "SCMP_ACT_KILL_PROCESS",
        "syscalls": [{"names": sorted(allowed), "action": "SCMP_ACT_ALLOW"}, *rules],
    }
    if error:
        profile["defaultErrnoRet"] = getattr(errno, error)
    if last(settings, "SystemCallArchitectures") == "native":
        profile["architectures"] = [ARCHES[platform.machine()]]
    return profile


def podman_run_flags(unit: Path, scratch: Path, writable: dict[str, Path]) -> list[str]:
    """``podman run`` flags that give the unit's service what its unit gives it.

    ``writable`` maps each of the unit's ``ReadWritePaths=`` (and ``StateDirectory=``
    in /var/lib) to a host directory, the test's stand-in for that part of the disk.
    ``scratch`` holds the seccomp profile."""
    settings = service_settings(unit)
    user, group = last(settings, "User"), last(settings, "Group")
    flags = [f"--user={user}:{group}" if group else f"--user={user}"]
    for value in every(settings, "Environment"):
        flags.append(f"--env={value}")
    if workdir := last(settings, "WorkingDirectory"):
        flags.append(f"--workdir={workdir}")
    if last(settings, "ProtectSystem") == "strict":
        flags.append("--read-only")
    paths = every(settings, "ReadWritePaths")
    paths += [f"/var/lib/{name}" for name in every(settings, "StateDirectory")]
    assert set(paths) == set(writable), f"ReadWritePaths= and StateDirectory= are {paths}"
    flags += [f"--volume={writable[path]}:{path}" for path in paths]
    if last(settings, "PrivateTmp") in ("true", "yes"):
        flags += ["--tmpfs=/tmp", "--tmpfs=/var/tmp"]
    if last(settings, "ProtectHome") in ("true", "yes"):
        flags += ["--tmpfs=/home:ro", "--tmpfs=/root:ro"]
    if any(name == "CapabilityBoundingSet" for name, _ in settings):
        assert not every(settings, "CapabilityBoundingSet"), "only an empty set is given"
        flags.append("--cap-drop=all")
    if last(settings, "NoNewPrivileges") in ("true", "yes"):
        flags.append("--security-opt=no-new-privileges")
    if umask := last(settings, "UMask"):
        flags.append(f"--umask={umask}")
    if any(name == "SystemCallFilter" for name, _ in settings):
        profile = scratch / f"{unit.stem}.seccomp.json"
        profile.write_text(json.dumps(seccomp_profile(settings)))
        flags.append(f"--security-opt=seccomp={profile}")
    return flags


def exec_start(unit: Path) -> list[str]:
    """The unit's ``ExecStart=`` command line."""
    argv = shlex.split(last(service_settings(unit), "ExecStart"))
    assert argv and argv[0].startswith("/"), argv
    return argv

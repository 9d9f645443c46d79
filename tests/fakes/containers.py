"""Real container images with podman, the way these machines allow (no registry, no daemon).

``base_image()`` builds ``debian:bookworm-slim`` with debootstrap from the apt
mirror the machine already uses, when podman does not have it yet;
``build_image()`` builds ``deploy/Dockerfile`` (``build_release_image()`` through
``scripts/build-image``, as an operator does); ``Container`` runs the image
detached as a non-root user on the host network, so it reaches the tests' fake
servers and redis-server on 127.0.0.1. Tests that need this fail, never skip,
when podman is missing: ``scripts/test`` installs it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = "docker.io/library/debian:bookworm-slim"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
RUNC = "/usr/sbin/runc"
RUN_FLAGS = [
    "--runtime", RUNC,
    "--no-healthcheck",  # podman runs HEALTHCHECK through systemd timers; the test runs it
    "--network=host",
    "--ulimit", "nofile=4096:4096",
    "--ulimit", "nproc=4096:4096",
]  # fmt: skip


def podman(
    *args: str, timeout: float = 600, check: bool = True
) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("podman")
    assert binary, "podman is missing: ./scripts/test installs it (apt-get install podman)"
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=timeout, check=check
    )


def _mirror() -> str:
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for line in Path(path).read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    return "http://deb.debian.org/debian"


def base_image() -> str:
    """``debian:bookworm-slim`` in podman's store, built here with debootstrap if missing."""
    if podman("image", "exists", BASE, check=False).returncode == 0:
        return BASE
    with tempfile.TemporaryDirectory() as scratch:
        rootfs = Path(scratch) / "rootfs"
        subprocess.run(
            ["debootstrap", "--variant=minbase", "bookworm", str(rootfs), _mirror()],
            check=True,
            capture_output=True,
            timeout=900,
        )
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        subprocess.run(
            ["podman", "import", "-", BASE], stdin=tar.stdout, check=True, capture_output=True
        )
        tar.stdout.close()
        assert tar.wait() == 0
    return BASE


def _build_flags() -> list[str]:
    """``podman build`` flags these machines need (see the module's docstring)."""
    flags = ["--format", "docker", "--isolation=chroot", "--network=host"]
    if HOST_CA.exists():  # this machine's TLS-inspecting proxy; empty build args elsewhere
        flags += [
            "--volume", f"{HOST_CA}:/host-ca.crt:ro",
            "--build-arg", "PIP_CERT=/host-ca.crt",
            "--build-arg", "SSL_CERT_FILE=/host-ca.crt",
        ]  # fmt: skip
    return flags


def build_image(tag: str) -> str:
    """Build ``deploy/Dockerfile`` from the checkout as ``tag``."""
    base_image()
    args = ["build", *_build_flags()]
    args += ["-t", tag, "-f", str(ROOT / "deploy" / "Dockerfile"), str(ROOT)]
    built = podman(*args, timeout=1200, check=False)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return tag


def build_release_image(name: str, *flags: str) -> str:
    """Build the image as an operator does, with ``scripts/build-image`` (version and
    labels from git), as ``name:latest``; ``flags`` go to ``podman build``."""
    base_image()
    env = {**os.environ, "ENGINE": "podman", "IMAGE": name}
    built = subprocess.run(
        [str(ROOT / "scripts" / "build-image"), *_build_flags(), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return f"{name}:latest"


def run(image: str, *command: str, env: dict[str, str] | None = None) -> str:
    """Run ``command`` in a throwaway container; its output (stdout and stderr)."""
    flags = [f"--env={k}={v}" for k, v in (env or {}).items()]
    done = podman("run", "--rm", *RUN_FLAGS, *flags, image, *command, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


class Container:
    """One detached container of ``image`` with ``home`` as its ``/data``."""

    def __init__(
        self,
        image: str,
        home: Path,
        env: dict[str, str],
        *command: str,
        hardening: list[str] | None = None,
        healthcheck: bool = False,
    ) -> None:
        """``healthcheck``: keep the image's HEALTHCHECK for ``podman healthcheck run``
        (never run by a timer: there is no systemd here)."""
        self.name = f"chorus-test-{uuid.uuid4().hex[:10]}"
        flags = [f"--env={k}={v}" for k, v in env.items()] + (hardening or [])
        run_flags = RUN_FLAGS
        if healthcheck:
            run_flags = [f for f in RUN_FLAGS if f != "--no-healthcheck"]
            run_flags.append("--health-interval=disable")
        podman(
            "run", "--detach", "--name", self.name, *run_flags, *flags,
            "--volume", f"{home}:/data", image, *command,
        )  # fmt: skip

    def healthy(self) -> bool:
        """Whether the image's HEALTHCHECK passes now (``podman healthcheck run``)."""
        done = podman("healthcheck", "run", self.name, check=False, timeout=60)
        return done.returncode == 0

    def exec(self, *command: str) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *command, check=False, timeout=60)

    def logs(self) -> str:
        done = podman("logs", self.name, check=False)
        return done.stdout + done.stderr

    def running(self) -> bool:
        done = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False)
        return done.stdout.strip() == "true"

    def stop(self, timeout: float = 90) -> int:
        """SIGTERM to PID 1 (tini, which passes it on) and the exit code once it is gone."""
        podman("kill", "--signal", "TERM", self.name, check=False)
        done = podman("wait", self.name, timeout=timeout)
        return int(done.stdout.strip().splitlines()[-1])

    def remove(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            podman("rm", "--force", "--time", "0", self.name, check=False, timeout=60)


def compose_hardening(service: dict[str, object]) -> list[str]:
    """``podman run`` flags for a compose service's read_only, tmpfs, cap_drop, security_opt."""
    flags: list[str] = []
    if service.get("read_only"):
        flags.append("--read-only")
    for path in service.get("tmpfs") or []:  # type: ignore[attr-defined]
        flags += ["--tmpfs", str(path)]
    for cap in service.get("cap_drop") or []:  # type: ignore[attr-defined]
        flags += ["--cap-drop", str(cap)]
    for option in service.get("security_opt") or []:  # type: ignore[attr-defined]
        flags += ["--security-opt", str(option).replace(":true", "")]
    return flags

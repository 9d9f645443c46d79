"""A stock Debian 12 with this checkout in /opt/chorus and deploy/systemd/install.sh run
in it, twice, the way docs/OPERATIONS.md says; built with podman, once per content.

The image's layer holds what install.sh made (cached while the checkout is the same)
and, in /install-check/, what the machine looked like after the first run and after
the second, for the test to compare."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.fakes.containers import HOST_CA, ROOT, base_image, podman

SNAPSHOT = r"""#!/bin/sh
# What install.sh leaves behind: the user, the modes and owners, the units, the
# virtualenv's packages and whether anything in it is writable by others.
set -e
getent passwd chorus
getent group chorus
stat -c '%n %U:%G %a' /opt/chorus/.venv /var/lib/chorus /etc/chorus /etc/chorus/env \
  /etc/systemd/system/chorus-*
sha256sum /etc/systemd/system/chorus-* /etc/chorus/env
ls /opt/chorus/.venv/lib/python3*/site-packages | sort
echo "writable-by-others: $(find /opt/chorus/.venv -perm /022 ! -type l | wc -l)"
"""

CONTAINERFILE = """\
FROM {base}
ARG PIP_CERT=""
ARG SSL_CERT_FILE=""
COPY snapshot.sh /install-check/snapshot.sh
COPY chorus /opt/chorus
RUN PIP_CERT="$PIP_CERT" SSL_CERT_FILE="$SSL_CERT_FILE" /opt/chorus/deploy/systemd/install.sh \\
 && sh /install-check/snapshot.sh > /install-check/first \\
 && echo KEPT=1 >> /etc/chorus/env \\
 && sh /install-check/snapshot.sh > /install-check/kept \\
 && PIP_CERT="$PIP_CERT" SSL_CERT_FILE="$SSL_CERT_FILE" /opt/chorus/deploy/systemd/install.sh \\
 && sh /install-check/snapshot.sh > /install-check/second
"""


UNUSED = ("tests/", "docs/", "bench/")


def checkout_files() -> list[str]:
    """The checkout's files as a clone holds them (tracked and new, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    names = [name for name in listed.split("\0") if name and (ROOT / name).is_file()]
    # what install.sh does not read is left out, so that changing it reuses the image
    return sorted(name for name in names if not name.startswith(UNUSED))


def build_systemd_image(tag: str) -> str:
    """Build the image ``tag``: Debian 12, the checkout copied in, install.sh run twice."""
    base = base_image()
    with tempfile.TemporaryDirectory() as scratch:
        context = Path(scratch)
        for name in checkout_files():
            target = context / "chorus" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)
        (context / "snapshot.sh").write_text(SNAPSHOT)
        (context / "Containerfile").write_text(CONTAINERFILE.format(base=base))
        args = ["build", "--format", "docker", "--isolation=chroot", "--network=host"]
        if HOST_CA.exists():  # this machine's TLS-inspecting proxy; nothing elsewhere
            args += [
                "--volume", f"{HOST_CA}:/host-ca.crt:ro",
                "--build-arg", "PIP_CERT=/host-ca.crt",
                "--build-arg", "SSL_CERT_FILE=/host-ca.crt",
            ]  # fmt: skip
        args += ["-t", tag, "-f", str(context / "Containerfile"), str(context)]
        built = podman(*args, timeout=1800, check=False)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    return tag

"""The systemd path on a stock Debian 12, for real: the checkout in /opt/chorus,
``deploy/systemd/install.sh`` run (twice: the same result), then ``chorus gateway``
started as ``chorus-gateway.service`` says — its user, environment, working
directory, read-only system with only /var/lib/chorus writable, no capabilities, its
umask and its system call filter with MemoryDenyWriteExecute — answers on Telegram,
serves /healthz, stays up (the same process) and stops with exit 0 on SIGTERM.

systemd itself does not run as PID 1 in podman here: tests/fakes/systemd_units.py
turns the unit's settings into podman's (and says which it cannot give)."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.systemd_image import build_systemd_image
from tests.fakes import FakeOpenAI
from tests.fakes.containers import ROOT, RUN_FLAGS, podman, run
from tests.fakes.systemd_units import exec_start, last, podman_run_flags, service_settings
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN
from tests.telegram.test_telegram_process import free_port, get, wait_ready

pytestmark = pytest.mark.container

IMAGE = "localhost/chorus-systemd:test"
UNITS = ROOT / "deploy" / "systemd"
GATEWAY = UNITS / "chorus-gateway.service"


@pytest.fixture(scope="module")
def image() -> str:
    return build_systemd_image(IMAGE)


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


def snapshot(image: str, name: str) -> list[str]:
    return run(image, "cat", f"/install-check/{name}").splitlines()


def test_install_sh_builds_the_venv_user_home_and_units_and_a_second_run_changes_nothing(
    image: str,
) -> None:
    first, kept, second = (snapshot(image, name) for name in ("first", "kept", "second"))
    assert second == kept  # the second run: the same machine, the secrets file kept
    [edited] = [line for line in first if line not in kept]  # only the file's checksum
    assert edited.endswith("  /etc/chorus/env")
    assert "KEPT=1" in run(image, "cat", "/etc/chorus/env")
    user = next(line for line in second if line.startswith("chorus:x:"))
    assert user.split(":")[5:] == ["/var/lib/chorus", "/usr/sbin/nologin"]
    modes = {line.split(" ")[0]: line.split(" ", 1)[1] for line in second if line.startswith("/")}
    assert modes["/var/lib/chorus"] == "chorus:chorus 700"
    assert modes["/etc/chorus/env"] == "root:root 600"
    assert modes["/opt/chorus/.venv"] == "root:root 755"  # the services cannot change it
    assert "writable-by-others: 0" in second
    for unit in sorted(UNITS.glob("*.service")) + sorted(UNITS.glob("*.timer")):
        assert modes[f"/etc/systemd/system/{unit.name}"] == "root:root 644"
        installed = run(image, "cat", f"/etc/systemd/system/{unit.name}")
        assert installed == unit.read_text(), unit.name
    # nothing to install when a service starts: no uv, no pip in what it runs
    assert exec_start(GATEWAY)[0] == "/opt/chorus/.venv/bin/chorus"
    assert run(image, "/opt/chorus/.venv/bin/chorus", "--version").startswith("chorus ")
    assert "uv" not in run(image, "ls", "/opt/chorus/.venv/bin").split()


def documented_doctor() -> str:
    """The ``chorus doctor`` command of docs/OPERATIONS.md's systemd steps, for ``sh -c``."""
    text = (ROOT / "docs" / "OPERATIONS.md").read_text()
    section = text[text.index("### systemd") :]
    block = section[section.index("```sh", section.index("Check the configuration")) + 5 :]
    command = block[: block.index("```")].replace("\\\n", " ").strip()
    assert command.startswith("sudo sh -c '") and command.endswith("'"), command
    return command.removeprefix("sudo sh -c '").removesuffix("'")


def uid_of(image: str, user: str) -> int:
    return int(run(image, "id", "-u", user).strip())


def chorus_pid(name: str) -> str:
    """The pid (on the host) of the container's ``chorus gateway`` process."""
    top = podman("top", name, "hpid", "args", check=False)
    assert top.returncode == 0, top.stdout + top.stderr
    found = [
        line.split()[0]
        for line in top.stdout.splitlines()
        if line.rstrip().endswith("chorus gateway") and "podman-init" not in line  # --init
    ]
    assert len(found) == 1, top.stdout
    return found[0]


async def test_the_gateway_runs_as_its_unit_says_and_stays_up(
    image: str, tmp_path: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    settings = service_settings(GATEWAY)
    home = tmp_path / "var-lib-chorus"  # /var/lib/chorus, made by install.sh: 0700
    home.mkdir(mode=0o700)
    os.chown(home, uid_of(image, last(settings, "User")), -1)
    port = free_port()
    secrets = tmp_path / "etc-chorus-env"  # what the operator writes into /etc/chorus/env
    secrets.write_text(
        "\n".join(
            [
                f"OPENAI_BASE_URL={server.base_url}",
                "OPENAI_API_KEY=sk-systemd-test",
                f"TELEGRAM_BOT_TOKEN={telegram.token}",
                f"CHORUS_TELEGRAM__BASE_URL={telegram.base_url}",
                f"CHORUS_TELEGRAM__BASE_FILE_URL={telegram.base_file_url}",
                f"CHORUS_AUTH__ALLOWED_USERS=telegram:{ANN}",
                f"CHORUS_GATEWAY__HTTP__PORT={port}",
                "PTB_TIMEDELTA=1",
            ]
        )
        + "\n"
    )
    assert last(settings, "EnvironmentFile") == "/etc/chorus/env"
    flags = podman_run_flags(GATEWAY, tmp_path, {"/var/lib/chorus": home})
    name = f"chorus-systemd-{uuid.uuid4().hex[:10]}"
    podman(
        "run", "--detach", "--name", name, *RUN_FLAGS, "--init", *flags,
        f"--env-file={secrets}", image, *exec_start(GATEWAY),
    )  # fmt: skip
    try:
        await wait_ready(port, timeout=60)
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/healthz")
        assert status == 200, body
        pid = chorus_pid(name)

        server.reply("Hello from the systemd unit.")
        telegram.message("hi", user_id=ANN)
        [reply] = await telegram.wait_messages(ANN, 1)
        assert reply.text == "Hello from the systemd unit."

        # no restart loop: after RestartSec (and more) the same process still answers
        await asyncio.sleep(float(last(settings, "RestartSec", "5")) + 1)
        assert chorus_pid(name) == pid
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/healthz")
        assert status == 200, body

        # what it wrote is the chorus user's only (UMask=0077) and only in its home
        state = home / "state.db"
        assert state.exists(), sorted(p.name for p in home.iterdir())
        assert state.stat().st_mode & 0o077 == 0, oct(state.stat().st_mode)

        # systemctl stop: SIGTERM, then exit 0 (Restart=on-failure does not restart it)
        podman("kill", "--signal", "TERM", name, check=False)
        done = podman("wait", name, timeout=90)
        logs = podman("logs", name, check=False)
        assert done.stdout.strip().splitlines()[-1] == "0", logs.stdout + logs.stderr
        assert telegram.token not in logs.stdout + logs.stderr

        # docs/OPERATIONS.md's check, as root with the secrets file: all is well
        doctor = podman(
            "run", "--rm", *RUN_FLAGS, f"--volume={home}:/var/lib/chorus",
            f"--volume={secrets}:/etc/chorus/env:ro", image, "sh", "-c", documented_doctor(),
            check=False, timeout=120,
        )  # fmt: skip
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert "[ok  ] telegram" in doctor.stdout and "state.db" in doctor.stdout
    finally:
        podman("rm", "--force", "--time", "0", name, check=False, timeout=60)


def test_the_seccomp_filter_refuses_what_the_unit_refuses(image: str, tmp_path: Path) -> None:
    """The emulated filter is not a no-op: writable+executable memory, a netlink socket
    and a privileged call are refused under it, and all allowed without it."""
    probe = (
        "import ctypes, mmap, os, socket\n"
        "results = []\n"
        "try:\n"
        "    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "    results.append('wx-ok')\n"
        "except OSError:\n"
        "    results.append('wx-refused')\n"
        "try:\n"
        "    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close()\n"
        "    results.append('netlink-ok')\n"
        "except OSError:\n"
        "    results.append('netlink-refused')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "results.append('setpriority-ok' if libc.setpriority(0, 0, 1) == 0"
        " else 'setpriority-refused')\n"
        "print(' '.join(results))\n"
    )
    python = "/opt/chorus/.venv/bin/python"
    free = podman("run", "--rm", *RUN_FLAGS, image, python, "-c", probe, check=False)
    assert free.stdout.split() == ["wx-ok", "netlink-ok", "setpriority-ok"], free.stderr
    home = tmp_path / "home"
    home.mkdir()
    flags = podman_run_flags(GATEWAY, tmp_path, {"/var/lib/chorus": home})
    held = podman("run", "--rm", *RUN_FLAGS, *flags, image, python, "-c", probe, check=False)
    assert held.stdout.split() == ["wx-refused", "netlink-refused", "setpriority-refused"], (
        held.stdout + held.stderr
    )
    profile = json.loads((tmp_path / "chorus-gateway.seccomp.json").read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"

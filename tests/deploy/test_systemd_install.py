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
import redis
from rq.registry import FinishedJobRegistry

from tests.deploy.systemd_image import build_systemd_image
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.containers import ROOT, RUN_FLAGS, podman, run
from tests.fakes.systemd_units import exec_start, last, podman_run_flags, service_settings
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN
from tests.telegram.test_telegram_process import free_port, get, wait_ready

pytest_plugins = ["tests.fakes.redis_fixtures"]
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


def chorus_pid(name: str, command: str) -> str:
    """The pid (on the host) of the container's ``chorus <command>`` process."""
    top = podman("top", name, "hpid", "args", check=False)
    assert top.returncode == 0, top.stdout + top.stderr
    found = [
        line.split()[0]
        for line in top.stdout.splitlines()
        if line.rstrip().endswith(f"chorus {command}") and "podman-init" not in line  # --init
    ]
    assert len(found) == 1, top.stdout
    return found[0]


class Service:
    """One unit's ``ExecStart=`` in a detached container of the installed image, run
    as the unit says, with ``secrets`` as its ``EnvironmentFile=``."""

    def __init__(
        self, image: str, unit: Path, scratch: Path, writable: dict[str, Path], secrets: Path
    ) -> None:
        settings = service_settings(unit)
        assert last(settings, "EnvironmentFile") == "/etc/chorus/env"
        self.name = f"chorus-systemd-{uuid.uuid4().hex[:10]}"
        flags = podman_run_flags(unit, scratch, writable)
        podman(
            "run", "--detach", "--name", self.name, *RUN_FLAGS, "--init", *flags,
            f"--env-file={secrets}", image, *exec_start(unit),
        )  # fmt: skip

    def logs(self) -> str:
        done = podman("logs", self.name, check=False)
        return done.stdout + done.stderr

    def wait(self, timeout: float = 90) -> int:
        done = podman("wait", self.name, timeout=timeout)
        return int(done.stdout.strip().splitlines()[-1])

    def stop(self) -> int:
        """``systemctl stop``: SIGTERM (the unit's KillSignal=), then its exit code."""
        podman("kill", "--signal", "TERM", self.name, check=False)
        return self.wait()

    def remove(self) -> None:
        podman("rm", "--force", "--time", "0", self.name, check=False, timeout=60)


def owner_only(path: Path) -> bool:
    return path.stat().st_mode & 0o077 == 0


async def test_the_services_run_as_their_units_say(
    image: str,
    tmp_path: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    redis_server: RedisServer,
) -> None:
    """The gateway answers and stays up, a worker runs its jobs, both stop with 0 on
    SIGTERM, the backup service backs up, and the documented doctor check passes."""
    uid = uid_of(image, last(service_settings(GATEWAY), "User"))
    home = tmp_path / "var-lib-chorus"  # /var/lib/chorus as install.sh made it: 0700
    backups = tmp_path / "var-lib-chorus-backups"  # systemd makes StateDirectory= 0700
    for directory in (home, backups):
        directory.mkdir(mode=0o700)
        os.chown(directory, uid, -1)
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
                f"CHORUS_REDIS__URL={redis_server.url}",
                "CHORUS_MEMORY__FLUSH_MIN_TURNS=1",
                "PTB_TIMEDELTA=1",
            ]
        )
        + "\n"
    )
    writable = {"/var/lib/chorus": home}
    services: list[Service] = []
    try:
        gateway = Service(image, GATEWAY, tmp_path, writable, secrets)
        services.append(gateway)
        await wait_ready(port, timeout=60)
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/healthz")
        assert status == 200, body
        pid = chorus_pid(gateway.name, "gateway")

        server.reply("Hello from the systemd unit.")
        telegram.message("hi", user_id=ANN)
        [reply] = await telegram.wait_messages(ANN, 1)
        assert reply.text == "Hello from the systemd unit."

        # no restart loop: after RestartSec (and more) the same process still answers
        await asyncio.sleep(float(last(service_settings(GATEWAY), "RestartSec", "5")) + 1)
        assert chorus_pid(gateway.name, "gateway") == pid
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/healthz")
        assert status == 200, body

        # systemctl stop: the gateway ends the session and queues its end in Redis
        assert gateway.stop() == 0, gateway.logs()[-3000:]
        worker = Service(image, UNITS / "chorus-worker@.service", tmp_path, writable, secrets)
        services.append(worker)
        finished = FinishedJobRegistry("chorus", connection=redis.Redis.from_url(redis_server.url))
        for _ in range(600):  # the worker's work horse runs it under the same sandbox
            if any(job.startswith("chorus-end-") for job in finished.get_job_ids()):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("no job finished:\n" + worker.logs()[-3000:])
        assert worker.stop() == 0, worker.logs()[-3000:]

        # what they wrote is the chorus user's only (UMask=0077)
        state = home / "state.db"
        assert state.exists(), sorted(p.name for p in home.iterdir())
        assert owner_only(state), oct(state.stat().st_mode)
        assert state.stat().st_uid == uid

        # the timer's service: a verified backup into its own state directory
        backup_unit = UNITS / "chorus-backup.service"
        backup = Service(
            image, backup_unit, tmp_path, {**writable, "/var/lib/chorus-backups": backups}, secrets
        )
        services.append(backup)
        assert backup.wait() == 0, backup.logs()[-3000:]
        [archive] = backups.glob("chorus-backup-*.tar.gz")
        assert owner_only(archive), oct(archive.stat().st_mode)

        logs = "".join(service.logs() for service in services)
        assert telegram.token not in logs and "sk-systemd-test" not in logs

        # docs/OPERATIONS.md's check, as root with the secrets file: all is well
        doctor = podman(
            "run", "--rm", *RUN_FLAGS, f"--volume={home}:/var/lib/chorus",
            f"--volume={secrets}:/etc/chorus/env:ro", image, "sh", "-c", documented_doctor(),
            check=False, timeout=120,
        )  # fmt: skip
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert "[ok  ] telegram" in doctor.stdout and "[ok  ] redis" in doctor.stdout
    finally:
        for service in services:
            service.remove()


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

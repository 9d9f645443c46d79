"""deploy/compose.yaml, deploy/compose.replicas.yaml and the nginx config hold nothing
that only Docker Compose understands: podman-compose (and podman under it) runs
them as they are, and the documented stop command stops every replica."""

from __future__ import annotations

import os
import re
import string
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
FILES = ("compose.yaml", "compose.replicas.yaml")
# tmpfs options both Docker and podman (4.3, Debian 12's) accept; podman refuses
# uid= and gid= ("unknown mount option").
TMPFS_OPTIONS = {"rw", "ro", "exec", "noexec", "suid", "nosuid", "dev", "nodev", "size", "mode"}
# Docker's embedded DNS server: not there under podman (aardvark-dns answers on the
# network's gateway address).
DOCKER_DNS = "127.0.0.11"


def services(name: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = yaml.safe_load((DEPLOY / name).read_text())["services"]
    return found


def chorus_services(name: str) -> dict[str, dict[str, Any]]:
    return {k: s for k, s in services(name).items() if s.get("command", [""])[0] == "chorus"}


@pytest.mark.parametrize("name", FILES)
def test_tmpfs_mounts_use_only_options_podman_accepts(name: str) -> None:
    for service in services(name).values():
        for entry in service.get("tmpfs", []):
            _, _, options = entry.partition(":")
            keys = {option.split("=")[0] for option in options.split(",") if option}
            assert keys <= TMPFS_OPTIONS, entry


def test_replicas_keep_chorus_home_in_a_tmpfs_any_user_may_write() -> None:
    """No uid= to give the tmpfs to chorus's user: a tmpfs without a mode is 1777
    under both, and chorus creates its home (mode 0700) inside it. A tmpfs over a
    directory of the image (its /data) is root's under podman: not that one."""
    for service in chorus_services("compose.replicas.yaml").values():
        home = PurePosixPath(service["environment"]["CHORUS_HOME"])
        mounts = {entry.split(":")[0]: entry for entry in service["tmpfs"]}
        parent = str(home.parent)
        assert parent in mounts and mounts[parent] == parent, mounts  # no options
        assert parent == "/tmp"  # 1777 in the image too (podman copies it up)


@pytest.mark.parametrize("name", FILES)
def test_images_are_fully_qualified(name: str) -> None:
    """podman resolves a short name like ``redis:7`` through registries.conf (and
    refuses to guess without a terminal); Docker takes the full name as well."""
    for service in services(name).values():
        image = service["image"]
        if "build" in service:  # built here, named by CHORUS_IMAGE
            continue
        assert re.fullmatch(r"[a-z0-9.-]+\.[a-z]+/[a-z0-9./_-]+:[\w.-]+", image), image


@pytest.mark.parametrize("name", FILES)
def test_replica_counts_are_settings_podman_compose_reads(name: str) -> None:
    """podman-compose ignores ``deploy.replicas`` without ``mode: replicated``, takes
    a single ``--scale`` and its ``down`` stops only the containers the file's
    counts name: the counts are variables (deploy/.env), read by ``up`` and ``down``."""
    for service_name, service in chorus_services(name).items():
        deploy = service.get("deploy", {})
        if service_name == "backup":
            assert "replicas" not in deploy
            continue
        if "replicas" not in deploy:
            assert service_name == "gateway" and name == "compose.yaml"  # one poller
            continue
        assert deploy["mode"] == "replicated"
        assert re.fullmatch(r"\$\{[A-Z_]+_REPLICAS:-\d+\}", str(deploy["replicas"]))


@pytest.mark.parametrize("name", FILES)
def test_the_documented_commands_scale_by_the_counts_and_stop_with_down(name: str) -> None:
    header = [line for line in (DEPLOY / name).read_text().splitlines() if line.startswith("#")]
    commands = [line for line in header if re.match(r"#\s+(docker compose|podman-compose) ", line)]
    assert not any("--scale" in line for line in commands), commands
    assert any(line.split()[-1] == "down" or " down " in line for line in commands), commands
    assert any("podman-compose" in line for line in header)
    blocks = re.findall(r"```sh\n(.*?)```", (DEPLOY / "README.md").read_text(), re.S)
    readme = [line for block in blocks for line in block.splitlines() if "compose " in line]
    assert not any("--scale" in line for line in readme), readme
    assert f"docker compose -f deploy/{name} down" in readme or name == "compose.yaml"


def test_nginx_names_no_docker_only_dns_server() -> None:
    """The resolver comes from the lb container's /etc/resolv.conf: the nginx image's
    entrypoint sources the mounted *.envsh files of /docker-entrypoint.d/, then
    writes each template of /etc/nginx/templates/ into NGINX_ENVSUBST_OUTPUT_DIR,
    where nginx-replicas.conf includes it."""
    conf = (DEPLOY / "nginx-replicas.conf").read_text()
    directives = re.sub(r"#[^\n]*", "", conf)
    assert DOCKER_DNS not in directives and "resolver " not in directives
    [include] = re.findall(r"\binclude\s+(\S+);", directives)

    lb = services("compose.replicas.yaml")["lb"]
    output_dir = PurePosixPath(lb["environment"]["NGINX_ENVSUBST_OUTPUT_DIR"])
    assert str(output_dir) in lb["tmpfs"]  # writable on the read-only root
    mounts = {target: (DEPLOY / source, mode) for source, target, mode in
              (volume.split(":") for volume in lb["volumes"])}  # fmt: skip
    [script] = [t for t in mounts if t.startswith("/docker-entrypoint.d/")]
    assert script.endswith(".envsh") and mounts[script][1] == "ro"
    assert os.access(mounts[script][0], os.X_OK)  # the entrypoint skips it otherwise
    assert PurePosixPath(script).name < "20-envsubst-on-templates.sh"  # runs first
    [template] = [t for t in mounts if t.startswith("/etc/nginx/templates/")]
    relative = PurePosixPath(template).relative_to("/etc/nginx/templates")
    assert relative.suffix == ".template" and mounts[template][1] == "ro"
    assert str(output_dir / relative.with_suffix("")) == include


@pytest.mark.parametrize(
    ("resolv_conf", "server"),
    [
        ("nameserver 127.0.0.11\noptions ndots:0\n", "127.0.0.11"),  # Docker
        # podman (netavark): aardvark-dns on the network's gateway, then the host's
        ("search dns.podman\nnameserver 10.89.1.1\nnameserver 10.255.255.53\n", "10.89.1.1"),
        ("nameserver fd00::1\nnameserver 10.0.0.1\n", "[fd00::1]"),
    ],
)
def test_the_resolver_line_names_the_first_dns_server(
    tmp_path: Path, resolv_conf: str, server: str
) -> None:
    """What the entrypoint does with the two files, run for real with sh: nginx asks
    only the network's DNS (the host's servers answer "no such name" for replicas)."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(resolv_conf)
    found = subprocess.run(
        ["sh", "-c", '. "$0" && printf %s "$CHORUS_LB_RESOLVER"', DEPLOY / "nginx-resolver.envsh"],
        env={"PATH": os.environ["PATH"], "RESOLV_CONF": str(resolv)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert found == server
    template = (DEPLOY / "nginx-resolver.conf.template").read_text()
    line = string.Template(template).substitute(CHORUS_LB_RESOLVER=found)
    directives = [d for d in re.sub(r"#[^\n]*", "", line).split(";") if d.strip()]
    assert [d.split() for d in directives] == [["resolver", server, "valid=10s", "ipv6=off"]]

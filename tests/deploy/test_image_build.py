"""The image as ``scripts/build-image`` builds it, checked for real with podman: its
size, no file that can gain privileges, its OCI labels from git, everything chorus
imports still loading after the trimming, the optional provider libraries as a
build argument (EXTRAS), and the replicas' compose hardening accepted by podman."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import datetime
from importlib.metadata import version
from typing import Any

import pytest
import yaml

from tests.fakes.containers import (
    ROOT,
    RUN_FLAGS,
    build_release_image,
    compose_hardening,
    podman,
    run,
)

pytestmark = pytest.mark.container

NAME = "localhost/chorus-release-test"
EXTRAS_NAME = "localhost/chorus-extras-test"
MAX_BYTES = 200_000_000  # README's figure for the image, all layers together
# Two optional libraries with few dependencies of their own: the build stays short.
EXTRAS = ("hindsight", "supermemory")
EXTRA_MODULES = ("hindsight_client", "supermemory")
OTEL_ONLY = ("agent.tracing._otel", "agent.tracing._export")
"""Loaded only when tracing is on, from the ``otel`` extra the default image leaves out."""


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    yield build_release_image(NAME)
    remove_tags(NAME, EXTRAS_NAME)  # the version tags would pile up run after run


def remove_tags(*names: str) -> None:
    listed = podman("images", "--format", "{{.Repository}}:{{.Tag}}", check=False).stdout
    tags = [tag for tag in listed.split() if tag.rsplit(":", 1)[0] in names]
    if tags:
        podman("rmi", "--force", *tags, check=False)


def inspect(image: str) -> dict[str, Any]:
    inspected: dict[str, Any] = json.loads(podman("image", "inspect", image).stdout)[0]
    return inspected


def as_root(image: str, *command: str) -> subprocess.CompletedProcess[str]:
    return podman("run", "--rm", *RUN_FLAGS, "--user", "0", image, *command, check=False)


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def test_the_image_is_at_most_200_mb_and_everything_chorus_imports_loads(image: str) -> None:
    """Small, and nothing the trimming removed (apt's libraries, iconv modules, debug
    symbols, the standard library's bytecode) is needed: every module of chorus, and
    what the HEALTHCHECK imports, loads with the image's python."""
    size = inspect(image)["Size"]
    assert size <= MAX_BYTES, f"{size / 1e6:.1f} MB"
    script = (
        "import importlib, pkgutil, sys\n"
        "for name in ('gateway', 'agent', 'memory', 'plugins'):\n"
        "    for info in pkgutil.walk_packages(importlib.import_module(name).__path__,"
        " name + '.'):\n"
        f"        if info.name not in {OTEL_ONLY!r}:\n"
        "            importlib.import_module(info.name)\n"
        "import urllib.request\n"
        "print(len(sys.modules))\n"
    )
    output = run(image, "python3", "-c", script)
    assert int(output.split()[-1]) > 1000


def test_no_file_in_the_image_is_setuid_or_setgid(image: str) -> None:
    found = as_root(image, "find", "/", "-xdev", "-type", "f", "-perm", "/6000")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == ""


def test_no_package_manager_and_a_consistent_package_database(image: str) -> None:
    assert as_root(image, "sh", "-c", "command -v apt-get").returncode != 0
    audit = as_root(image, "dpkg", "--audit")
    assert audit.returncode == 0 and audit.stdout.strip() == "", audit.stdout + audit.stderr
    listed = as_root(image, "dpkg-query", "-W", "-f", "${Package}\n").stdout.split()
    assert {"python3", "tini", "ca-certificates"} <= set(listed)


def test_no_perl_and_none_of_the_disk_mount_and_login_tools(image: str) -> None:
    """Purged with dpkg, not only deleted: Perl (which only package configuration
    used), util-linux with ``su``, ``mount``, e2fsprogs and adduser; the time zones
    chorus and ``TZ`` need are still there, without the leap-second ones."""
    found = as_root(
        image, "sh", "-c", "for t in perl su mount umount mkfs.ext4 adduser; do command -v $t; done"
    )
    assert found.stdout.strip() == ""
    listed = set(as_root(image, "dpkg-query", "-W", "-f", "${Package}\n").stdout.split())
    assert not {"perl-base", "util-linux", "mount", "e2fsprogs", "adduser"} & listed
    zones = (
        "import os, zoneinfo; print(zoneinfo.ZoneInfo('Asia/Tokyo').key,"
        " os.path.exists('/usr/share/zoneinfo/right'))"
    )
    assert run(image, "python3", "-c", zones).split() == ["Asia/Tokyo", "False"]
    assert run(image, "date", "+%Z", env={"TZ": "Asia/Tokyo"}).strip() == "JST"


def test_labels_name_the_version_the_commit_and_the_build_time(image: str) -> None:
    labels = inspect(image)["Config"]["Labels"]
    chorus = version("chorus")  # what scripts/build-image reads from git
    assert labels["org.opencontainers.image.version"] == chorus
    assert run(image, "chorus", "--version").split()[-1] == chorus
    revision = git("rev-parse", "HEAD")
    assert len(revision) == 40 and labels["org.opencontainers.image.revision"] == revision
    created = datetime.fromisoformat(labels["org.opencontainers.image.created"])
    assert created.tzinfo is not None
    source = labels["org.opencontainers.image.source"]
    assert "@" not in source  # never a remote's credentials
    remote = git("remote", "get-url", "origin")
    if remote.startswith("https://") and "@" not in remote:
        assert source == remote
    # the image is tagged with the version too ("+" is not allowed in a tag)
    assert f"{NAME}:{chorus.replace('+', '-')}" in inspect(image)["RepoTags"]


def test_the_optional_libraries_are_a_build_argument(image: str) -> None:
    missing = podman(
        "run", "--rm", *RUN_FLAGS, image, "python3", "-c", "import supermemory", check=False
    )
    assert missing.returncode != 0  # none by default
    extras = build_release_image(EXTRAS_NAME, "--build-arg", f"EXTRAS={' '.join(EXTRAS)}")
    imported = run(extras, "python3", "-c", f"import {', '.join(EXTRA_MODULES)}; print('imported')")
    assert imported.strip().endswith("imported")
    assert inspect(extras)["Size"] > inspect(image)["Size"]


def test_replicas_containers_write_their_home_under_podman(image: str) -> None:
    """compose.replicas.yaml's hardening, as podman-compose hands it to podman (tmpfs
    entries as ``--tmpfs``): podman accepts every option and chorus, not root, can
    create and use its CHORUS_HOME there."""
    services = yaml.safe_load((ROOT / "deploy" / "compose.replicas.yaml").read_text())
    for name in ("gateway", "worker"):
        service = services["services"][name]
        home = service["environment"]["CHORUS_HOME"]
        done = podman(
            "run", "--rm", *RUN_FLAGS, *compose_hardening(service), f"--env=CHORUS_HOME={home}",
            image, "sh", "-c", f'chorus doctor >/dev/null && stat -c "%U %a" "{home}"',
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.split() == ["chorus", "700"]

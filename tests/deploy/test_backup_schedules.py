"""Scheduled backups: the systemd timer, the Kubernetes CronJob and the Compose profile
each run ``chorus backup`` with options it has, verified and pruned (``--keep N``), into
a directory outside CHORUS_HOME; the units parse, the CronJob validates (with the other
manifests, in test_deploy_files) and shares the gateway's volume on the gateway's node."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import typer.main

from gateway.cli import app
from tests.deploy.test_deploy_files import DEPLOY, compose, k8s_documents

SYSTEMD = DEPLOY / "systemd"


def backup_options() -> set[str]:
    command = typer.main.get_command(app).commands["backup"]  # type: ignore[attr-defined]
    return {opt for param in command.params for opt in getattr(param, "opts", ())}


def assert_a_chorus_backup(argv: list[str], home: str) -> str:
    """``argv`` is ``chorus backup DIR --verify --keep N`` with real options; DIR is returned."""
    assert argv[:2] == ["chorus", "backup"], argv
    destination = argv[2]
    options = argv[3:]
    assert {option for option in options if option.startswith("--")} <= backup_options()
    assert "--verify" in options
    keep = int(options[options.index("--keep") + 1])
    assert keep >= 2
    assert not PurePosixPath(destination).is_relative_to(home), "backups outside CHORUS_HOME"
    return destination


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def test_the_systemd_timer_starts_a_verified_pruned_backup_outside_the_home() -> None:
    service, timer = unit(SYSTEMD / "chorus-backup.service"), unit(SYSTEMD / "chorus-backup.timer")
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["User"] == "chorus"
    home = service["Service"]["Environment"].removeprefix("CHORUS_HOME=")
    argv = service["Service"]["ExecStart"].split()
    assert argv[0].endswith("/chorus")
    destination = assert_a_chorus_backup(["chorus", *argv[1:]], home)
    # ProtectSystem=strict: the destination is the unit's own StateDirectory (0700)
    assert service["Service"]["ProtectSystem"] == "strict"
    assert destination == f"/var/lib/{service['Service']['StateDirectory']}"
    assert service["Service"]["StateDirectoryMode"] == "0700"
    assert home in service["Service"]["ReadWritePaths"].split()
    assert "Unit" not in timer["Timer"]  # it starts chorus-backup.service, its namesake
    assert timer["Timer"]["OnCalendar"] and timer["Timer"]["Persistent"] == "true"
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_the_systemd_backup_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:  # the structural check above still holds
        return
    stub = tmp_path / "chorus"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    for name in ("chorus-backup.service", "chorus-backup.timer"):
        text = (SYSTEMD / name).read_text()  # the install path does not exist here
        (tmp_path / name).write_text(text.replace("/opt/chorus/.venv/bin/chorus", str(stub)))
    found = subprocess.run(
        [analyze, "verify", "chorus-backup.service", "chorus-backup.timer"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0 and not found.stderr.strip(), found.stderr


def test_the_k8s_cronjob_backs_up_the_gateways_volume_on_its_node() -> None:
    documents = k8s_documents()
    [job] = [d for d in documents if d["kind"] == "CronJob"]
    config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]
    assert job["spec"]["concurrencyPolicy"] == "Forbid"
    spec: dict[str, Any] = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    [container] = spec["containers"]
    destination = assert_a_chorus_backup(container["command"], config["CHORUS_HOME"])
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    claims = {
        v["name"]: v.get("persistentVolumeClaim", {}).get("claimName") for v in spec["volumes"]
    }
    assert claims[mounts["/data"]] == "chorus-home"
    assert claims[mounts[destination]] == "chorus-backups"
    assert any(
        d["kind"] == "PersistentVolumeClaim" and d["metadata"]["name"] == "chorus-backups"
        for d in documents
    )
    [term] = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "gateway"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["envFrom"] == [
        {"configMapRef": {"name": "chorus-config"}},
        {"secretRef": {"name": "chorus-secrets"}},
    ]


def test_the_compose_backup_profile_backs_up_daily_into_its_own_volume() -> None:
    data = compose()
    backup = data["services"]["backup"]
    assert backup["profiles"] == ["backup"]  # not started by a plain `up`
    shell, flag, script = backup["command"]
    assert (shell, flag) == ("sh", "-c")
    line = script[script.index("chorus backup") :].split("||")[0].split()
    destination = assert_a_chorus_backup(line, "/data")  # the image's CHORUS_HOME
    assert backup["volumes"] == ["chorus-home:/data", f"chorus-backups:{destination}"]
    assert "chorus-backups" in data["volumes"]
    assert "sleep 86400" in script and script.startswith("while :; do")
    assert backup["read_only"] is True and backup["cap_drop"] == ["ALL"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert f"chown chorus:chorus /data {destination}" in dockerfile  # writable by chorus

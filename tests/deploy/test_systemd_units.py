"""The systemd units: each service runs the virtualenv deploy/systemd/install.sh builds
(nothing installed at start), writes only to its home, is sandboxed to an exposure of
3.0 or less by ``systemd-analyze security`` and passes ``systemd-analyze verify``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.containers import ROOT
from tests.fakes.systemd_units import (
    analyze,
    every,
    exec_start,
    exposure,
    last,
    service_settings,
)

UNITS = ROOT / "deploy" / "systemd"
SERVICES = sorted(UNITS.glob("*.service"))
VENV_CHORUS = "/opt/chorus/.venv/bin/chorus"

if not sys.platform.startswith("linux"):  # systemd-analyze exists only there
    pytest.skip("systemd-analyze runs on Linux only", allow_module_level=True)

HARDENING = {
    "ProtectSystem": "strict",
    "ReadWritePaths": "/var/lib/chorus",
    "ProtectHome": "true",
    "PrivateTmp": "true",
    "PrivateDevices": "true",
    "ProtectKernelTunables": "true",
    "ProtectKernelModules": "true",
    "ProtectKernelLogs": "true",
    "ProtectControlGroups": "true",
    "ProtectClock": "true",
    "ProtectHostname": "true",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "RestrictNamespaces": "true",
    "LockPersonality": "true",
    "MemoryDenyWriteExecute": "true",
    "RestrictRealtime": "true",
    "RestrictSUIDSGID": "true",
    "SystemCallArchitectures": "native",
    "UMask": "0077",
    "NoNewPrivileges": "true",
}


def test_there_are_the_three_services() -> None:
    assert [unit.name for unit in SERVICES] == [
        "chorus-backup.service",
        "chorus-gateway.service",
        "chorus-worker@.service",
    ]


@pytest.mark.parametrize("unit", SERVICES, ids=lambda unit: unit.name)
def test_each_service_runs_the_installed_virtualenv_as_chorus(unit: Path) -> None:
    settings = service_settings(unit)
    assert exec_start(unit)[0] == VENV_CHORUS  # no scripts/chorus, no uv at start
    assert last(settings, "User") == last(settings, "Group") == "chorus"
    assert last(settings, "Environment") == "CHORUS_HOME=/var/lib/chorus"
    assert last(settings, "WorkingDirectory") == "/var/lib/chorus"
    assert last(settings, "EnvironmentFile") == "/etc/chorus/env"


@pytest.mark.parametrize("unit", SERVICES, ids=lambda unit: unit.name)
def test_each_service_is_sandboxed(unit: Path) -> None:
    settings = service_settings(unit)
    for key, value in HARDENING.items():
        assert last(settings, key, default="<unset>") == value, f"{unit.name}: {key}="
    filters = every(settings, "SystemCallFilter")
    assert filters[0] == "@system-service", filters
    assert exposure(unit) <= 3.0


def test_systemd_analyze_security_rates_a_bare_unit_exposed(tmp_path: Path) -> None:
    """The number the test reads is the one systemd-analyze gives: a unit with no
    sandbox is rated far above 3.0."""
    bare = tmp_path / "bare.service"
    bare.write_text("[Service]\nExecStart=/bin/true\n")
    assert exposure(bare) > 8.0


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    stub = tmp_path / "chorus"  # the virtualenv does not exist on this machine
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    names = [unit.name for unit in SERVICES] + [unit.name for unit in UNITS.glob("*.timer")]
    for name in names:
        text = (UNITS / name).read_text().replace(VENV_CHORUS, str(stub))
        (tmp_path / name).write_text(text)
    names = [name.replace("@.", "@1.") for name in names]
    for name in names:
        if "@1." in name:  # a template is verified as one of its instances
            (tmp_path / name).write_text((tmp_path / name.replace("@1.", "@.")).read_text())
    found = subprocess.run(
        [analyze(), "verify", *names], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0 and not found.stderr.strip(), found.stderr

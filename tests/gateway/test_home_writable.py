"""A CHORUS_HOME this uid cannot write: one line naming the uid, the path and the fix.

``chorus gateway`` and ``chorus doctor`` run as a real process on a home of mode
0500 (and one of mode 0, which this uid cannot even enter). As root, whom file
modes do not stop, the process runs without its capabilities (``setpriv``), so
the kernel checks the modes as for any other owner.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHORUS = Path(sys.executable).with_name("chorus")


def _as_ordinary_user() -> list[str]:
    """A command prefix under which file modes apply to this process."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot stop this process")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


def run_on(home: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "400", "TELEGRAM_BOT_TOKEN": "1:test"})
    return subprocess.run(
        [*_as_ordinary_user(), str(CHORUS), command],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("mode", [0o500, 0o000], ids=["0500", "0000"])
@pytest.mark.parametrize("command", ["gateway", "doctor"])
def test_an_unwritable_home_is_one_line_with_the_uid_and_the_fix(
    tmp_path: Path, command: str, mode: int
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    home.chmod(mode)
    try:
        result = run_on(home, command)
    finally:
        home.chmod(0o700)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if str(home) in line]
    assert len(lines) == 1, output
    assert f"uid {os.geteuid()} cannot write CHORUS_HOME {home}" in lines[0]
    assert f"chmod 700 {home}" in lines[0]
    assert not (home / "state.db").exists()

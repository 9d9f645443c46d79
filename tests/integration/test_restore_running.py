"""``chorus restore --force`` on a home a gateway or worker runs on is refused, the home
left as it was: what the running process writes would go on over the restored data.
The lock is the one ``chorus gateway`` and ``chorus worker`` hold while they run."""

from __future__ import annotations

import os
from pathlib import Path

from gateway.cli._running import running
from memory.backup import write_backup
from tests.integration.test_backup_whole import chorus


def test_a_forced_restore_is_refused_while_a_gateway_or_worker_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True, mode=0o700)
    memory = home / "memories" / "MEMORY.md"
    memory.write_text("as backed up")
    archive = write_backup(home, tmp_path / "before.tar.gz").path
    memory.write_text("written since")

    with running(home):  # a gateway or worker runs on the home
        refused = chorus("restore", "--force", str(archive), home=home)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"gateway or worker is running on {home} (pid {os.getpid()})" in refused.stderr
        assert "stop it first" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert memory.read_text() == "written since"  # nothing restored

    done = chorus("restore", "--force", str(archive), home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert memory.read_text() == "as backed up"

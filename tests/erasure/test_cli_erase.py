"""`chorus users export|erase PERSON`: the operator's export, and erasure with its receipt."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from gateway.access import GatewayDB
from memory.paths import ChorusPaths, UserKey
from memory.store import DiskMemoryFiles
from memory.transcripts import SessionDB
from tests.plugins.holographic_cases import open_provider, tool

CHORUS = Path(sys.executable).with_name("chorus")
PERSON = "telegram:5"


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "COLUMNS": "200",
            "CHORUS_AUTH__ADMINS": "telegram:1",
            "CHORUS_MEMORY__PROVIDER": "holographic",
        }
    )
    return subprocess.run(
        [str(CHORUS), "users", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_users_erase_prints_a_receipt_and_audits_only_that_it_happened(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    paths = ChorusPaths(chorus_home)
    with SessionDB(paths.state_db) as db:
        db.create_session("s1", platform="telegram", user_key=PERSON, chat_id="5")
        db.append_message("s1", "user", "my locker code is 4711")
    DiskMemoryFiles().edit(paths.user_file(UserKey.parse(PERSON)), lambda _e: ["code 4711"])
    provider = open_provider(chorus_home, PERSON)
    tool(provider, action="add", content="The locker code is 4711.")
    provider.shutdown()

    out_file = chorus_home / "export.zip"
    exported = run(chorus_home, "export", PERSON, "--out", str(out_file))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert out_file.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(out_file) as z:
        assert "transcripts/s1.json" in z.namelist()
        assert "4711" in z.read("providers/holographic-telegram-5.json").decode()

    assert run(chorus_home, "erase", "not a key", "--yes").returncode == 2
    done = run(chorus_home, "erase", PERSON, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "transcripts of telegram:5: erased" in done.stdout
    assert "memory provider holographic: erased" in done.stdout
    with SessionDB(paths.state_db) as db:
        assert db.for_user(PERSON).search("4711") == []
    assert not paths.user_dir(UserKey.parse(PERSON)).exists()
    assert not (chorus_home / "providers" / "holographic" / "users" / "telegram" / "5").exists()
    with GatewayDB(paths.state_db) as gdb:
        audit = [(e.command, e.args, e.outcome) for e in gdb.audit_entries(10)]
    assert ("users erase", "<person>", "ok") in audit
    assert ("users export", "<person>", "ok") in audit

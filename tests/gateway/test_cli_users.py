"""`chorus users …`: pairing approval and access lists from the command line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from gateway.access import Authorizer, GatewayDB, PairingRequests
from gateway.clock import SystemClock
from gateway.config import AuthSettings
from gateway.events import InboundMessage
from memory.paths import ChorusPaths

CHORUS = Path(sys.executable).with_name("chorus")


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200", "CHORUS_AUTH__ADMINS": "telegram:1"})
    return subprocess.run(
        [str(CHORUS), "users", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_pairing_code_approved_from_the_cli(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    db_path = ChorusPaths(chorus_home).state_db
    stranger = InboundMessage("telegram", "dm-9", "9", "let me in", "m1", is_direct=True)
    with GatewayDB(db_path) as db:
        auth = Authorizer(AuthSettings(policy="pairing"), db, SystemClock())
        decision = auth.decide(stranger)
    assert decision.reply is not None
    code = re.search(r"\b([A-HJ-NP-Z2-9]{8})\b", decision.reply)
    assert code is not None
    with PairingRequests(db_path) as requests:  # what the admins were shown
        asked = requests.open("telegram:9", "", "telegram", "dm-9", time.time(), 3600.0)
    assert asked is not None

    approved = run(chorus_home, "approve", code.group(1).lower())
    assert approved.returncode == 0, approved.stderr
    assert "telegram:9" in approved.stdout
    with PairingRequests(db_path) as requests:
        decided = requests.get(asked.id)
    assert decided is not None and decided.status == "approved"
    assert (decided.decided_by or "").startswith("cli:")
    again = run(chorus_home, "approve", code.group(1))
    assert again.returncode == 1

    listed = run(chorus_home, "list")
    assert "telegram:9" in listed.stdout and "telegram:1" in listed.stdout
    assert run(chorus_home, "deny", "telegram:9").returncode == 0
    assert run(chorus_home, "deny", "telegram:1").returncode == 1  # admins cannot be locked out
    with GatewayDB(db_path) as db:
        record = db.get_access("telegram:9")
        audit = [(e.actor.startswith("cli:"), e.command, e.args) for e in db.audit_entries(10)]
    assert record is not None and record.state == "denied"
    assert (True, "users approve", "<code>") in audit
    assert all(code.group(1) not in args for _, _, args in audit)

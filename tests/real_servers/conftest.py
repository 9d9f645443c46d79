"""Where the real memory servers live, for the tests marked ``real_server``.

``./scripts/install-real-servers`` puts each server in a virtualenv of its own
under ``.real-servers/``. ``./scripts/test`` (and so CI) installs them and sets
``CHORUS_REAL_SERVERS=required``: a server missing then fails its tests. In a
plain ``pytest`` run without them the tests are skipped with that hint.

A failing test shows the end of the log of the real server it ran against
(any fixture value with a ``failure_log()``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL_SERVERS = ROOT / ".real-servers"


def real_server_bin(name: str, executable: str) -> Path:
    """The path of ``executable`` in the virtualenv of the real server ``name``."""
    path = REAL_SERVERS / name / "bin" / executable
    if path.exists():
        return path
    hint = f"the real {name} server is not installed ({path}); run ./scripts/install-real-servers"
    if os.environ.get("CHORUS_REAL_SERVERS") == "required":
        pytest.fail(hint)
    pytest.skip(hint)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing test shows the log of each real server it used (a fixture with ``failure_log``)."""
    report = yield
    if report.failed:
        for name, value in getattr(item, "funcargs", {}).items():
            failure_log = getattr(value, "failure_log", None)
            if callable(failure_log):
                report.sections.append((f"log of the real server ({name})", str(failure_log())))
    return report

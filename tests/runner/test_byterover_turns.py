"""ByteRover through the whole gateway: a person's words reach ``brv`` as text, also
when they start with a dash (after ``--``, never read as one of brv's options).

The fake ``brv`` is first on the ``PATH``; what the model was sent is read off the
fake LLM server's requests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.byterover_brv import calls, entries, install_fake_brv, path_with
from tests.runner.conftest import GatewayFactory, user_messages

NOTE = "--help the shed door code is 4711"


@pytest.fixture
def brv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = install_fake_brv(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(directory))
    return directory


def with_byterover(home: Path) -> None:
    """The provider, with room to start ``brv`` on a busy machine."""
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.yaml").write_text(
        "memory:\n  provider: byterover\n  providers:\n"
        "    byterover:\n      timeout: 60\n      prefetch_timeout: 60\n",
        encoding="utf-8",
    )


async def test_words_that_start_with_a_dash_are_curated_and_recalled_as_text(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, brv: Path
) -> None:
    with_byterover(chorus_home)
    gw = await make_gateway()
    server.reply("Noted.")
    await gw.ask(NOTE)
    await gw.settle()
    workdir = chorus_home / "providers" / "byterover" / "users" / "testchat" / "2"
    assert any(NOTE in entry for entry in entries(workdir))

    server.reply("It is 4711.")
    await gw.ask("-h what is the shed door code?")
    asked = user_messages(server.last_request)[-1]
    assert asked.startswith("-h what is the shed door code?") and "4711" in asked
    runs = [run["argv"] for run in calls(brv) if run["argv"][:1] in (["curate"], ["query"])]
    assert runs and all(argv[1:4] == ["--format", "json", "--"] for argv in runs)

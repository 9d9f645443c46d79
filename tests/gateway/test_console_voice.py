"""``/voice on`` in ``chorus console``: the choice is kept, the terminal plays nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.gateway.test_console import chat


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_voice_on_in_the_console_is_kept_but_nothing_is_read_out(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    server.reply("Here is the answer.")
    done = chat(
        chorus_home,
        server,
        "/voice on\nwhat now?\n/voice\n/quit\n",
        CHORUS_LLM__SPEECH_MODEL="tts-1",
    )
    assert done.returncode == 0, done.stderr
    assert "Spoken replies are on: my answers will also come as a voice message." in done.stdout
    assert "Not here, though: console has no voice messages" in done.stdout
    assert "Here is the answer." in done.stdout
    assert "Spoken replies are on: my answers also come as a voice message." in done.stdout
    assert server.speech_requests == []  # nothing asked of the endpoint for the terminal

"""What of an answer is read out (its words, not its Markdown or its code), and how long the
audio lasts (a Telegram voice message shows it)."""

from __future__ import annotations

import pytest

from gateway.adapters._ogg import opus_seconds
from gateway.media import spoken_text
from tests.fakes.openai_speech import ogg_opus


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("**Paris** is _the_ capital.", "Paris is the capital."),
        ("See [the docs](https://example.org/x) or ![a map](m.png).", "See the docs or a map."),
        ("# Plan\n> quoted\n- one\n- two", "Plan\nquoted\n- one\n- two"),
        ("Run this:\n```sh\nrm -rf build\n```\nthen wait.", "Run this:\nthen wait."),
        ("Unclosed ```python\nprint(1)", "Unclosed"),
        ("Use `make test`, then ~~not~~ deploy.", "Use make test, then not deploy."),
        ("```\nonly code\n```", ""),
    ],
)
def test_the_words_of_an_answer_as_they_are_read_out(answer: str, said: str) -> None:
    assert spoken_text(answer) == said


def test_the_length_of_an_opus_stream_is_read_from_its_last_page() -> None:
    assert opus_seconds(ogg_opus("x", 3.5)) == 3.5
    assert opus_seconds(b"ID3 an mp3") is None
    assert opus_seconds(b"OggS") is None

"""What of an answer is read out: its words, not its Markdown or its code."""

from __future__ import annotations

import pytest

from gateway.media import spoken_text


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

"""Recalled ``<memory-context>`` text never streams out, however the stream is cut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.providers import FENCE_CLOSE, FENCE_OPEN, ContextScrubber, build_memory_context_block

SECRET = "Bob's diagnosis is private"
BLOCK = build_memory_context_block(SECRET)


def stream(text: str, cuts: list[int]) -> str:
    scrubber = ContextScrubber()
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    return "".join(scrubber.feed(p) for p in pieces) + scrubber.finish()


plain = st.text(alphabet=st.characters(blacklist_characters="<[", blacklist_categories=("Cs",)))


@settings(max_examples=300)
@given(before=plain, after=plain, cuts=st.lists(st.integers(min_value=0, max_value=10_000)))
def test_a_fenced_block_never_comes_out_and_the_rest_does(
    before: str, after: str, cuts: list[int]
) -> None:
    shown = stream(before + BLOCK + after, cuts)
    assert SECRET not in shown and "memory-context" not in shown
    assert "recalled memory context" not in shown  # the system note goes too
    assert shown == before + "\n" + after or shown == before + after


@settings(max_examples=300)
@given(text=plain, cuts=st.lists(st.integers(min_value=0, max_value=10_000)))
def test_text_without_fences_passes_through_whole(text: str, cuts: list[int]) -> None:
    assert stream(text, cuts) == text


def test_a_tag_split_letter_by_letter_is_still_caught() -> None:
    text = f"Sure. {FENCE_OPEN}{SECRET}{FENCE_CLOSE} Anything else?"
    assert stream(text, list(range(len(text)))) == "Sure.  Anything else?"


def test_angle_brackets_and_brackets_that_are_not_tags_are_shown() -> None:
    text = "if a < b and [x] then <b>bold</b> [note: fine]"
    assert stream(text, list(range(0, len(text), 3))) == text


def test_an_unterminated_block_swallows_the_rest() -> None:
    assert stream(f"start {FENCE_OPEN} {SECRET} and more", [7, 20]) == "start "

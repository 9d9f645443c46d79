"""Splitting a reply into platform-sized parts: split, never cut short.

A cut falls on a paragraph break if one fits, else on a line break, else on a space,
and only as a last resort inside a word. Only the whitespace at a cut is dropped
(a line's indentation is kept). A cut inside a fenced code block closes the fence at
the end of one part and reopens it, with the same info string, at the start of the
next; those fence lines count toward the limit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Length = Callable[[str], int]
"""How a platform measures text: ``len`` (code points) or ``utf16_length`` (Telegram)."""

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})([^\n]*)")
_MARKER = re.compile(r"```|~~~")
_NONSPACE = re.compile(r"\S")
_PARAGRAPH = re.compile(r"\n(?=[ \t]*\n)")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"[ \t]")
_JOINERS = "\u200d\ufe0e\ufe0f"


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts it (an emoji beyond the BMP is 2)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True, slots=True)
class TextPart:
    """One part of a split text; ``start``/``end`` delimit the source text it shows."""

    text: str
    start: int
    end: int
    reopened: str = ""
    """The fence line the part starts with to reopen a code block cut before it."""


@dataclass(frozen=True, slots=True)
class _Fence:
    """A fenced code block, as offsets into the scanned text."""

    start: int
    """First character of the opening line."""
    body: int
    """First character after the opening line."""
    close: int | None
    """First character of the closing line; ``None`` if the text ends inside the block."""
    end: int
    """End of the closing line (of the text if there is none)."""
    opener: str
    closer: str


def split_text(text: str, limit: int, *, length: Length = len) -> list[str]:
    """Split ``text`` into parts with ``length(part) <= limit``; blank text gives ``[]``."""
    return [part.text for part in split_spans(text, limit, length=length)]


def split_spans(
    text: str,
    limit: int,
    *,
    length: Length = len,
    start: int = 0,
    reopened: str | None = None,
) -> list[TextPart]:
    """Split ``text[start:]`` like ``split_text``, keeping where each part comes from.

    A ``start`` inside a code block reopens the block at the start of the first part;
    pass the ``reopened`` of an earlier result's part starting there to skip finding it.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    parts: list[TextPart] = []
    pos = _skip_blank(text, start)
    carry = reopened if reopened is not None else _carry_at(text, pos, limit, length)
    while _NONSPACE.search(text, pos):
        rest = carry + text[pos:]
        whole = rest.rstrip()
        if length(whole) <= limit:
            parts.append(TextPart(whole, pos, len(text), carry))
            break
        part, cut, next_carry = _cut(rest, limit, length)
        consumed = cut - len(carry)
        if consumed < 1:  # only when the limit is too small for the reopened fence
            carry = ""
            continue
        if part.strip():  # blank only when indentation alone fills a tiny limit
            parts.append(TextPart(part, pos, pos + consumed, carry))
        pos = _skip_blank(text, pos + consumed)
        carry = next_carry
    return parts


def _skip_blank(text: str, pos: int) -> int:
    """Where content resumes at ``pos``: past blank space, keeping a line's indentation."""
    match = _NONSPACE.search(text, pos)
    if match is None:
        return len(text)
    newline = text.rfind("\n", pos, match.start())
    if newline >= 0:
        return newline + 1
    at_line_start = pos == 0 or text[pos - 1] == "\n"
    return pos if at_line_start else match.start()


def _aware(fence: _Fence, limit: int, length: Length) -> bool:
    """Fences are kept balanced unless their lines would take half of every part."""
    return length(fence.opener + "\n") + length("\n" + fence.closer) <= limit // 2


def _scan_fences(text: str, stop: int) -> list[_Fence]:
    """The code blocks opening on lines of ``text`` that start before ``stop``."""
    fences: list[_Fence] = []
    opened: tuple[int, int, str, str] | None = None
    for match in _fence_lines(text, len(text)):
        if opened is None and match.start() >= stop:
            break
        marker, info = match.group(1), match.group(2).strip()
        if opened is None:
            if not (marker[0] == "`" and "`" in info):
                body = min(match.end() + 1, len(text))
                opened = (match.start(), body, (marker + info).strip(), marker)
        elif marker[0] == opened[3][0] and len(marker) >= len(opened[3]) and not info:
            fences.append(_Fence(*opened[:2], match.start(), match.end(), *opened[2:]))
            opened = None
    if opened is not None:
        fences.append(_Fence(*opened[:2], None, len(text), *opened[2:]))
    return fences


def _fence_lines(text: str, stop: int) -> Iterator[re.Match[str]]:
    """The fence lines in ``text[:stop]`` (found by their marker: fast on long texts)."""
    pos = 0
    while (found := _MARKER.search(text, pos, stop)) is not None:
        line_start = text.rfind("\n", 0, found.start()) + 1
        line_end = text.find("\n", found.start(), stop)
        line_end = stop if line_end < 0 else line_end
        match = _FENCE.fullmatch(text, line_start, line_end)
        if match is not None:
            yield match
        pos = line_end + 1


def _carry_at(text: str, pos: int, limit: int, length: Length) -> str:
    """The fence line that reopens the code block ``pos`` lies in, if any."""
    if pos == 0:
        return ""
    for fence in _scan_fences(text, pos):
        inside = fence.body <= pos and (fence.close is None or pos <= fence.close)
        if inside and _aware(fence, limit, length):
            return fence.opener + "\n"
    return ""


def _fit(text: str, budget: int, length: Length) -> int:
    """The length of the longest prefix of ``text`` that ``length`` counts within ``budget``."""
    if budget <= 0:
        return 0
    low, high = 0, min(len(text), budget)
    while length(text[:high]) <= budget:
        if high == len(text):
            return high
        low, high = high, min(len(text), high * 2)
    while high - low > 1:
        middle = (low + high) // 2
        if length(text[:middle]) <= budget:
            low = middle
        else:
            high = middle
    return low


@dataclass(frozen=True, slots=True)
class _Plan:
    """A cut: the part is ``rest[:cut]``; the text resumes at ``resume``."""

    cut: int
    resume: int
    fence: _Fence | None = None
    """The code block the part has to close."""
    reopen: bool = False
    """Whether the next part reopens it (else only blank code was left in it)."""


def _cut(rest: str, limit: int, length: Length) -> tuple[str, int, str]:
    """The first part of ``rest`` (too long as a whole): its text, resume index, carried fence."""
    window = _fit(rest, limit, length)
    fences = [f for f in _scan_fences(rest, window + 1) if _aware(f, limit, length)]
    plan = _choose(rest, window, fences)
    if plan is not None and plan.fence is not None:
        reserve = max(length("\n" + f.closer) for f in fences)
        plan = _choose(rest, _fit(rest, limit - reserve, length), fences)
    if plan is None:
        return _fallback(rest, window, fences)
    part = rest[: plan.cut].rstrip()
    if plan.fence is None:
        return part, plan.resume, ""
    carry = plan.fence.opener + "\n" if plan.reopen else ""
    return f"{part}\n{plan.fence.closer}", plan.resume, carry


def _fallback(rest: str, window: int, fences: list[_Fence]) -> tuple[str, int, str]:
    """No cut fits: drop the blank lines a code block opens with, else cut at the window."""
    if fences and not rest[: fences[0].start].strip():
        block = fences[0]
        code = _NONSPACE.search(rest, block.body, block.end)
        if code is not None:
            resume = rest.rfind("\n", block.body, code.start()) + 1
            if resume > block.body:
                return "", resume, block.opener + "\n"
    cut = max(window, 1)
    return rest[:cut].rstrip(), cut, ""


def _choose(rest: str, window: int, fences: list[_Fence]) -> _Plan | None:
    """The best valid cut within ``rest[:window]``."""
    if window < 1:
        return None
    paragraphs = {m.start() for m in _PARAGRAPH.finditer(rest, 0, window + 2)}
    for block in fences:
        paragraphs.add(block.start - 1)
        if block.close is not None:
            paragraphs.add(block.end)
    levels = [
        sorted((p for p in paragraphs if 0 < p <= window and rest[p] == "\n"), reverse=True),
        [m.start() for m in _LINE.finditer(rest, 0, window + 1)][::-1],
        [m.start() for m in _SPACE.finditer(rest, 0, window + 1)][::-1],
        [_hard_cut(rest, window)],
    ]
    for candidates in levels:
        for cut in candidates:
            plan = _plan(rest, cut, fences)
            if plan is not None:
                return plan
    return None


def _hard_cut(rest: str, window: int) -> int:
    """Cut inside a word, but not between a character and its combining marks or joiners."""
    cut = window
    while cut > 1 and (
        unicodedata.combining(rest[cut]) or rest[cut] in _JOINERS or rest[cut - 1] in _JOINERS
    ):
        cut -= 1
    return cut


def _plan(rest: str, cut: int, fences: list[_Fence]) -> _Plan | None:
    """How ``rest`` would be cut at ``cut``; ``None`` where it must not be."""
    if _NONSPACE.search(rest, 0, cut) is None:
        return None
    for fence in fences:
        if cut <= fence.start:
            break
        if cut < fence.body:
            return None
        if fence.close is None or cut <= fence.close:
            if _NONSPACE.search(rest, fence.body, cut) is None:
                return None
            stop = fence.end if fence.close is None else fence.close
            if _NONSPACE.search(rest, cut, stop) is not None:
                return _Plan(cut, cut, fence, reopen=True)
            # only blank code is left: this part ends the block
            return _Plan(cut, fence.end, fence)
        if cut < fence.end:
            return None
    return _Plan(cut, cut)

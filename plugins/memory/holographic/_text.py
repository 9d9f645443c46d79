"""Text rules of the fact store: normalised content, search terms, entities, numbers.

Search terms: the text lower-cased, apostrophes dropped (``don't`` → ``dont``),
split on anything that is not a letter or digit, stop words removed, and each
word cut by a light suffix stemmer, so ``likes``, ``liked`` and ``liking``
all become ``lik`` (see :func:`stem`).

Entities, found by one deterministic rule (:func:`extract_entities`):

* quoted strings: ``"..."``, ``“...”`` or ``'...'`` of 2–80 characters;
* ``@handles``;
* numbers with a unit: ``10 km``, ``30 days``, ``10am``, ``5%``, ``$20``;
* capitalised words and runs of them: a word with any capital letter
  (``Anna``, ``PostgreSQL``, ``iPhone``), consecutive ones joined by single
  spaces forming one phrase (``Spirited Away``, ``Honda Civic``). Stop words
  at the start of a run are dropped (``The Lanterns`` → ``Lanterns``, ``My``
  and ``I`` never count), and a trailing ``'s`` is removed.

An entity's key is its text lower-cased with single spaces (``10km`` and
``10 km`` are both ``10 km``); its display form is the one first seen.
"""

from __future__ import annotations

import re
from typing import Final

_STOP_WORDS_TEXT = """
a about above after again against all am an and any anything are as at be because been
before being below between both but by can could did do does doing done down during each
else ever every few for from further get gets got had has have having he her here hers
herself him himself his how i id if im in into is it its itself ive just kind lets like ll
me more most much my myself no nor not now of off on once only or other our ours ourselves
out over own please really re same shall she should so some something such than that thats
the their theirs them themselves then there these they thing this those through to too under
until up us very was we were what whats when where which while who whom whose why will with
would you your yours yourself
"""

STOP_WORDS: Final = frozenset(_STOP_WORDS_TEXT.split())
"""Words that carry no topic. ``like`` is one (``what kind of coffee do I like``);
negations are too, and :data:`NEGATIONS` keeps them for contradiction checks."""

_NEGATIONS_TEXT = """
no not never none nothing nobody dont doesnt didnt isnt arent wasnt werent cant cannot
couldnt wont wouldnt shouldnt hasnt havent hadnt neither nor without
"""

NEGATIONS: Final = frozenset(_NEGATIONS_TEXT.split())

_WORD_RE = re.compile(r"[a-z0-9]+")
_APOSTROPHES_RE = re.compile(r"['’]")
_SPACE_RE = re.compile(r"\s+")
_NUMBER_RE = re.compile(r"\d+(?:[.,:]\d+)*")
_VOWELS = frozenset("aeiouy")

_UNITS = (
    "%|km/h|km|kms|cm|mm|m|kg|kgs|g|mg|lb|lbs|oz|mi|miles?|mph|ml|l|litres?|liters?"
    "|h|hrs?|hours?|min|mins|minutes?|s|secs?|seconds?|days?|weeks?|months?|years?|yrs?"
    "|am|pm|gb|mb|tb|kb|ghz|mhz|usd|eur|gbp|euros?|dollars?|pounds?|°c|°f|c|f"
)
_NUMBER_UNIT_RE = re.compile(
    rf"(?<![\w.])(?P<cur>[$€£])?(?P<num>\d+(?:[.,]\d+)?)(?:\s?(?P<unit>{_UNITS}))?(?![\w/])",
    re.IGNORECASE,
)
_QUOTED_RE = re.compile(
    r"\"(?P<a>[^\"\n]{2,80})\"|“(?P<b>[^”\n]{2,80})”|(?<!\w)'(?P<c>[^'\n]{2,80})'(?!\w)"
)
_HANDLE_RE = re.compile(r"(?<![\w@])@[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_CAP_WORD_RE = re.compile(r"[A-Za-z][\w'’+#-]*")
_POSSESSIVE_RE = re.compile(r"['’]s$", re.IGNORECASE)

MAX_ENTITIES = 20
"""At most this many entities are linked to one fact."""


def stem(word: str) -> str:
    """A light suffix stemmer: one suffix off, a doubled final consonant undone, final e off.

    ``likes``/``liked``/``liking``/``like`` → ``lik``; ``cities`` → ``city``;
    ``running`` → ``run``; ``programmer``/``programming`` → ``program``;
    ``quickly`` → ``quick``. Words of three letters or fewer stay as they are.
    """
    if len(word) <= 3 or word.isdigit():
        return word
    base = word
    if word.endswith("ies") and len(word) > 4:
        base = word[:-3] + "y"
    elif word.endswith("sses"):
        base = word[:-2]
    elif word.endswith(("ss", "us", "is")):
        base = word
    elif word.endswith("s"):
        base = word[:-1]
    for suffix in ("ing", "ed", "er", "ly"):
        if base.endswith(suffix) and len(base) - len(suffix) >= 3:
            cut = base[: -len(suffix)]
            if any(c in _VOWELS for c in cut):
                base = cut
                if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeioulsz":
                    base = base[:-1]
            break
    if len(base) > 3 and base.endswith("e"):
        base = base[:-1]
    return base


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``, apostrophes dropped, in order (stop words kept)."""
    return _WORD_RE.findall(_APOSTROPHES_RE.sub("", text.lower()))


def terms(text: str) -> list[str]:
    """The search terms of ``text``: stemmed non-stop words, first occurrence order, no repeats."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOP_WORDS and word not in NEGATIONS:
            seen.setdefault(stem(word), None)
    return list(seen)


def normalise_content(text: str) -> str:
    """The key two facts must share to be duplicates: lower-case, single spaces, no end dot."""
    return _SPACE_RE.sub(" ", text).strip().lower().rstrip(" .!;")


def clean_content(text: str) -> str:
    """``text`` with runs of whitespace collapsed to one space and the ends trimmed."""
    return _SPACE_RE.sub(" ", text).strip()


def is_negated(text: str) -> bool:
    """Whether ``text`` holds a negation word (``not``, ``never``, ``don't``...)."""
    return any(word in NEGATIONS for word in words(text))


def numbers(text: str) -> frozenset[str]:
    """The numbers written in ``text`` (``10``, ``9:30``, ``22.04``)."""
    return frozenset(_NUMBER_RE.findall(text))


def entity_key(name: str) -> str:
    """The matching key of an entity name: lower-case, single spaces, no possessive."""
    key = _POSSESSIVE_RE.sub("", clean_content(name).strip(" \t.,;:!?\"'“”()[]"))
    return key.lower()


def _number_entities(text: str) -> list[str]:
    found = []
    for match in _NUMBER_UNIT_RE.finditer(text):
        currency, number, unit = match.group("cur"), match.group("num"), match.group("unit")
        if currency:
            found.append(f"{currency}{number}")
        elif unit:
            found.append(f"{number} {unit}")
    return found


def _capitalised_runs(text: str) -> list[str]:
    runs: list[list[str]] = []
    current: list[str] = []
    previous_end = -1
    for match in _CAP_WORD_RE.finditer(text):
        word = match.group().rstrip("'’-")
        capitalised = any(c.isupper() for c in word)
        joined = previous_end >= 0 and text[previous_end : match.start()] == " "
        if capitalised and current and joined:
            current.append(word)
        else:
            if current:
                runs.append(current)
            current = [word] if capitalised else []
        previous_end = match.end()
        if current and _POSSESSIVE_RE.search(current[-1]):
            current[-1] = _POSSESSIVE_RE.sub("", current[-1])
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    phrases = []
    for run in runs:
        while run and _APOSTROPHES_RE.sub("", run[0].lower()) in STOP_WORDS | NEGATIONS:
            run = run[1:]
        if run:
            phrases.append(" ".join(run))
    return phrases


def extract_entities(text: str) -> list[str]:
    """The entities of ``text`` by the rule in the module docstring, display forms, no repeats."""
    found: dict[str, str] = {}
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED_RE.finditer(text)]
    handles = _HANDLE_RE.findall(text)
    unquoted = _QUOTED_RE.sub(" ", text)
    for name in (*quoted, *handles, *_number_entities(text), *_capitalised_runs(unquoted)):
        name = clean_content(name).rstrip(".")
        key = entity_key(name)
        if key and len(key) <= 80:
            found.setdefault(key, name)
        if len(found) >= MAX_ENTITIES:
            break
    return list(found.values())


def ngrams(text: str, longest: int = 3) -> list[str]:
    """Word n-grams of ``text`` up to ``longest`` words, as entity keys are spelt."""
    raw = [w for w in _SPACE_RE.split(text.lower()) if w]
    cleaned = [entity_key(w) for w in raw]
    grams: dict[str, None] = {}
    for size in range(1, longest + 1):
        for start in range(len(cleaned) - size + 1):
            gram = " ".join(w for w in cleaned[start : start + size] if w)
            if gram:
                grams.setdefault(gram, None)
    return list(grams)

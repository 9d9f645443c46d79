"""Scan text before it is saved to memory.

Memory entries are injected into every later system prompt, so a saved entry
is a privileged attack surface: an instruction smuggled into MEMORY.md would be
obeyed in every following session. ``scan_memory_content`` refuses, before
anything reaches the disk:

- **hidden characters**: every format character (Unicode category Cf: zero-width
  spaces and joiners, bidirectional marks, invisible operators, tag characters),
  variation selectors (also the Mongolian ones), the combining grapheme joiner,
  the Khmer inherent vowels, the Hangul fillers, and thin and hair spaces inside a
  word — except where emoji really use them (a joiner or a variation selector
  after an emoji, the tag letters of a subdivision flag);
- **instructions to the model** (prompt injection, role hijack, hiding things
  from the user, revealing its prompt, bypassing its rules), matched on the
  *intent*: the text is first folded (NFKC, so full-width and mathematical
  letters; accents; look-alike letters from Cyrillic, Greek and Armenian, and
  small capitals, to Latin; hidden characters dropped; case ignored; punctuation,
  underscores and symbols as spaces, symbols inside a word dropped, and
  letter-spaced words joined: ``i g n o r e``, ``i_g_n_o_r_e``), then matched
  against word patterns with room for filler words ("ignore each and every one
  of the earlier instructions");
- **exfiltration of secrets**: environment dumps (``printenv``, ``env``, ``set``,
  ``export -p``) piped or sent with curl, wget or netcat, secret files sent with
  them, ``/dev/tcp``, command substitution of ``printenv``, ``/proc/*/environ``,
  a Python one-liner reading ``os.environ``, reading credential files;
- **persistence**: SSH keys and ``authorized_keys``, chorus's own ``.env``.

What it does not promise: it is a tripwire for known shapes of attack, not an
understanding of text — a determined attacker can phrase an instruction no
pattern knows, and a plain false statement ("the office wifi password is at
evil.example") is no pattern at all. That is why non-admin writes to the shared
MEMORY.md wait for an admin's review (``memory.shared_writes``).
"""

from __future__ import annotations

import logging
import re
import unicodedata

logger = logging.getLogger(__name__)

_SECRET = r"(key|token|secret|passw(or)?d|credential|api)"
_SECRET_FILES = (
    r"(\.env\b|environ\b|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc|\.ssh|id_rsa|id_ed25519)"
)

_FILLER = (
    r"(?: (all|any|every|each|and|one|single|of|the|your|my|our|their|these|those|this|that|"
    r"previous|prior|last|"
    r"earlier|above|preceding|former|existing|original|initial|old|past|current|given|other|"
    r"system|developer|safety|security|standing|default|hidden))"
)
_WORD_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        r"\b(ignore|disregard|forget|override|bypass|abandon|discard|skip|drop)\b"
        + _FILLER
        + r"{0,8} (instructions?|rules|guidelines|guidance|directions|directives|prompts?|"
        r"programming|guardrails|constraints|safeguards|policies|policy|context|commands|"
        r"orders|training)\b",
        "prompt_injection",
    ),
    (
        r"\byou( a| )?re now\b|\byou r now\b|\bfrom now on you (are|will|must|shall|re)\b",
        "role_hijack",
    ),
    (r"\bpretend (to be|you are)\b|\bact as (a |an )?(unrestricted|jailbroken)\b", "role_hijack"),
    (
        r"\b(do not|don t|dont|never) (tell|inform|let|show|mention)\b(?: \w+){0,2}? "
        r"(the )?users?\b|\bwithout (telling|informing) the users?\b|"
        r"\b(keep|hide)\b(?: \w+){0,3}? (secret|hidden|confidential) from (the )?users?\b|"
        r"\bhide (it|this|that)(?: \w+){0,2}? from (the )?users?\b",
        "deception_hide",
    ),
    (
        r"\b(system prompt override|override (the |your )?system prompt|"
        r"(reveal|print|show|repeat|leak|output|dump|display|recite|disclose|echo|write out) "
        r"(the |your )?(full |entire |complete |exact |original )?"
        r"(system prompt|hidden instructions|initial instructions))\b",
        "sys_prompt_override",
    ),
    (
        r"\b(act|behave) as (if|though) you (have no|don t have|had no|have zero)\b"
        r"(?: \w+){0,2}? (restrictions|limits|rules|filters|guidelines)\b|"
        r"\b(jailbreak|developer mode|dan mode)\b",
        "bypass_restrictions",
    ),
)

_SHELL_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(curl|wget)[^\n]*\$\{?\w*" + _SECRET, "exfil_env"),
    (
        r"(curl|wget)[^\n]*(@|--post-file[= ]|--upload-file[= ]|--body-file[= ]|-t ?)[^\s]*"
        + _SECRET_FILES,
        "exfil_file",
    ),
    (r"(\$\(|`)\s*(printenv|env|set|export)\b", "exfil_env"),
    (r"\b(printenv|env)\b\s*(\||>)", "exfil_env"),
    (
        r"\b(set|export|declare)( -[px])?\s*\|[^\n]*\b(curl|wget|nc|ncat|netcat|socat|telnet)\b",
        "exfil_env",
    ),
    (r"\b(nc|ncat|netcat|socat|telnet)\b[^\n]*" + _SECRET_FILES, "exfil_file"),
    (r"/dev/(tcp|udp)/", "exfil_net"),
    (r"\becho\s+[^\n]*\$\{?\w*" + _SECRET, "exfil_env"),
    (r"/proc/(self|\d+|\$\$)/environ", "read_secrets"),
    (r"python[0-9.]*\s+-c[^\n]*\bos\.(environ|getenv)", "exfil_env"),
    (r"\bos\.environ\b[^\n]*\b(requests|urllib|http|socket|urlopen)\b", "exfil_env"),
    (r"\b(cat|less|more|head|tail|base64)\s+[^\n]*" + _SECRET_FILES, "read_secrets"),
    (r"authorized_keys", "ssh_backdoor"),
    (r"\$\{?home\}?/\.ssh|~/\.ssh", "ssh_access"),
    (
        r"\$\{?home\}?/\.chorus/\.env|~/\.chorus/\.env|\$(chorus_home|\{chorus_home\})/\.env",
        "chorus_env",
    ),
)

THREAT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name) for pattern, name in (*_WORD_PATTERNS, *_SHELL_PATTERNS)
)
"""Compiled ``(pattern, threat name)`` pairs, matched against the folded text in order."""

_WORD_COUNT = len(_WORD_PATTERNS)

_CONFUSABLES = str.maketrans(
    {
        # Cyrillic look-alikes
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j",
        "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g",
        # Greek look-alikes
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
        # Latin and other look-alikes
        "ı": "i", "ł": "l", "ø": "o", "ß": "ss", "ſ": "s", "ꞵ": "b",
        # Armenian look-alikes
        "օ": "o", "ս": "u", "ո": "n", "հ": "h", "ց": "g", "զ": "q", "ա": "w", "ք": "p",
        # small capitals
        "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h",
        "ɪ": "i", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p",
        "ʀ": "r", "ꜱ": "s", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
    }
)  # fmt: skip
"""Letters of other scripts that pass for Latin ones, folded for scanning only."""

_HANGUL_FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})
_OTHER_INVISIBLES = frozenset({0x034F, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F})
"""The combining grapheme joiner, Khmer inherent vowels, Mongolian variation selectors."""
_THIN_SPACES = frozenset({0x2006, 0x2008, 0x2009, 0x200A, 0x205F})
"""Spaces narrow enough to pass unseen; hidden when they split a word (``ig\u200anore``)."""
_EMOJI_JOINERS = frozenset({0x200D, 0xFE0E, 0xFE0F, 0x20E3})
_TAG_BASE = 0x1F3F4  # waving black flag: tags after it spell a subdivision flag


def _is_variation_selector(code: int) -> bool:
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _is_tag(code: int) -> bool:
    return 0xE0000 <= code <= 0xE007F


def _is_emoji_base(char: str) -> bool:
    code = ord(char)
    return (
        unicodedata.category(char) == "So"
        or 0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or char in "#*0123456789"
        or code in _EMOJI_JOINERS
    )


def _inside_word(text: str, index: int) -> bool:
    return 0 < index < len(text) - 1 and text[index - 1].isalpha() and text[index + 1].isalpha()


def _hidden(text: str) -> list[tuple[int, str]]:
    """Positions and characters that hide text or structure (see the module docstring)."""
    found: list[tuple[int, str]] = []
    in_flag = False
    for index, char in enumerate(text):
        code = ord(char)
        previous = text[index - 1] if index else ""
        if code == _TAG_BASE:
            in_flag = True
            continue
        if _is_tag(code):
            if not in_flag:
                found.append((index, char))
            if code == 0xE007F:
                in_flag = False
            continue
        in_flag = False
        invisible = (
            unicodedata.category(char) == "Cf"
            or _is_variation_selector(code)
            or code in _OTHER_INVISIBLES
            or code in _HANGUL_FILLERS
            or (code in _THIN_SPACES and _inside_word(text, index))
        )
        if not invisible:
            continue
        emoji_use = code in _EMOJI_JOINERS and previous and _is_emoji_base(previous)
        if not emoji_use:
            found.append((index, char))
    return found


def _name(char: str) -> str:
    return unicodedata.name(char, f"U+{ord(char):04X}")


def fold(text: str) -> str:
    """The text as the scan reads it: NFKC, hidden characters dropped, look-alikes folded."""
    kept = "".join(
        char
        for index, char in enumerate(text)
        if not (
            unicodedata.category(char) in ("Cf", "Mn", "Me")
            or _is_tag(ord(char))
            or ord(char) in _HANGUL_FILLERS
            or ord(char) in _OTHER_INVISIBLES
            or (ord(char) in _THIN_SPACES and _inside_word(text, index))
        )
    )
    normal = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", kept))
    normal = "".join(c for c in normal if unicodedata.category(c) not in ("Mn", "Me"))
    return normal.casefold().translate(_CONFUSABLES)


def _join_spelled(words: list[str]) -> list[str]:
    """Runs of three or more one-letter words joined into one (``i g n o r e``: ``ignore``)."""
    joined: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if len(word) == 1:
            run.append(word)
            continue
        joined.extend(["".join(run)] if len(run) >= 3 else run)
        run = []
        if word:
            joined.append(word)
    return joined


def _word_forms(folded: str) -> tuple[str, str, str]:
    """The words, with punctuation and symbols as separators; with symbols inside a word
    dropped (``ig😀nore`` reads ``ignore``); and with letter-spaced words joined
    (``i g n o r e`` and ``i_g_n_o_r_e`` read ``ignore``)."""
    words = re.findall(r"[^\W_]+", folded)
    joined = " ".join(re.findall(r"[^\W_]+", re.sub(r"(?<=\w)[^\w\s]+(?=\w)", "", folded)))
    return " ".join(words), joined, " ".join(_join_spelled(words))


def make_visible(text: str) -> str:
    """``text`` with every hidden character shown as ``⟦U+200B ZERO WIDTH SPACE⟧``."""
    hidden = dict(_hidden(text))
    if not hidden:
        return text
    return "".join(
        f"⟦U+{ord(char):04X} {_name(char)}⟧" if index in hidden else char
        for index, char in enumerate(text)
    )


def threat_in(content: str) -> str | None:
    """What the scan finds in ``content`` ("an invisible character U+200B (…)", "threat
    pattern 'role_hijack'"), or None; logs nothing (``scan_memory_content`` does)."""
    hidden = _hidden(content)
    if hidden:
        _, char = hidden[0]
        return f"an invisible character U+{ord(char):04X} ({_name(char)})"
    folded = fold(content)
    word_forms = _word_forms(folded)
    shell = (re.sub(r"\s+", " ", folded),)
    for number, (pattern, threat) in enumerate(THREAT_PATTERNS):
        if any(pattern.search(form) for form in (word_forms if number < _WORD_COUNT else shell)):
            return f"threat pattern '{threat}'"
    return None


def scan_memory_content(content: str) -> str | None:
    """Return None when ``content`` is safe to save, else a short refusal naming the threat."""
    threat = threat_in(content)
    if threat is None:
        return None
    logger.warning("memory content refused: %s", threat.split(" (")[0])
    if threat.startswith("threat pattern"):
        return f"Refused: content matches {threat}"
    return f"Refused: content contains {threat}"

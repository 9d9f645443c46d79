"""Scan text before it is saved to memory.

Memory entries are injected into every later system prompt, so a saved entry
is a privileged attack surface: an instruction smuggled into MEMORY.md would be
obeyed in every following session. ``scan_memory_content`` refuses prompt
injection, secret exfiltration, SSH persistence and invisible unicode before
anything reaches the disk.
"""

from __future__ import annotations

import logging
import re
import unicodedata

logger = logging.getLogger(__name__)

_SECRET_WORDS = r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)"

_RAW_PATTERNS: tuple[tuple[str, str], ...] = (
    # Prompt injection
    (r"ignore\s+(previous|all|above|prior)\s+instructions", "prompt_injection"),
    (r"you\s+are\s+now\s+", "role_hijack"),
    (r"do\s+not\s+tell\s+the\s+user", "deception_hide"),
    (r"system\s+prompt\s+override", "sys_prompt_override"),
    (r"disregard\s+(your|all|any)\s+(instructions|rules|guidelines)", "disregard_rules"),
    (
        r"act\s+as\s+(if|though)\s+you\s+(have\s+no|don't\s+have)\s+(restrictions|limits|rules)",
        "bypass_restrictions",
    ),
    # Exfiltration of secrets through curl / wget / cat
    (r"curl\s+[^\n]*\$\{?\w*" + _SECRET_WORDS, "exfil_curl"),
    (r"wget\s+[^\n]*\$\{?\w*" + _SECRET_WORDS, "exfil_wget"),
    (r"cat\s+[^\n]*(\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc)", "read_secrets"),
    # Persistence and access through SSH
    (r"authorized_keys", "ssh_backdoor"),
    (r"\$\{?HOME\}?/\.ssh|~/\.ssh", "ssh_access"),
    # Our own secrets file
    (
        r"\$\{?HOME\}?/\.chorus/\.env|~/\.chorus/\.env|\$(CHORUS_HOME|\{CHORUS_HOME\})/\.env",
        "chorus_env",
    ),
)

THREAT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), name) for pattern, name in _RAW_PATTERNS
)
"""Compiled ``(pattern, threat name)`` pairs, checked case-insensitively in order."""

_INVISIBLE_CODEPOINTS: tuple[int, ...] = (
    0x200B,  # zero width space
    0x200C,  # zero width non-joiner
    0x200D,  # zero width joiner
    0x2060,  # word joiner
    0xFEFF,  # zero width no-break space (byte order mark)
    *range(0x202A, 0x202F),  # bidirectional embeddings and overrides
    *range(0x2066, 0x206A),  # bidirectional isolates
    0x00AD,  # soft hyphen
)

INVISIBLE_CHARS: dict[str, str] = {
    chr(codepoint): unicodedata.name(chr(codepoint)) for codepoint in _INVISIBLE_CODEPOINTS
}
"""Invisible or text-direction characters refused in memory, mapped to their unicode name."""


def scan_memory_content(content: str) -> str | None:
    """Return None when ``content`` is safe to save, else a short refusal naming the threat."""
    for char in content:
        name = INVISIBLE_CHARS.get(char)
        if name is not None:
            logger.warning("memory content refused: invisible character U+%04X", ord(char))
            return (
                f"Refused: content contains invisible unicode character U+{ord(char):04X} ({name})"
            )
    for pattern, threat in THREAT_PATTERNS:
        if pattern.search(content):
            logger.warning("memory content refused: threat pattern %s", threat)
            return f"Refused: content matches threat pattern '{threat}'"
    return None

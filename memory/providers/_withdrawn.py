"""The turn a ``rewound`` ``on_session_switch`` withdraws, read once for every provider."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory.providers._fence import strip_memory_context


@dataclass(frozen=True)
class WithdrawnTurn:
    """The texts of a withdrawn turn as ``sync_turn`` had them, and who said it.

    ``speaker`` is the user key ``sync_turn`` was given as ``speaker`` (a group
    session), or None: the session's own user.
    """

    user: str
    assistant: str
    speaker: str | None


def withdrawn_turn(rewound: bool, kwargs: Mapping[str, Any]) -> WithdrawnTurn | None:
    """The turn withdrawn by ``/undo`` or ``/retry`` from ``on_session_switch``'s keyword
    arguments; None when nothing synced was withdrawn (or the arguments are malformed)."""
    withdrawn = kwargs.get("withdrawn_turn")
    if not rewound or not isinstance(withdrawn, Mapping):
        return None
    user = strip_memory_context(str(withdrawn.get("user_content") or "")).strip()
    assistant = strip_memory_context(str(withdrawn.get("assistant_content") or "")).strip()
    if not user and not assistant:
        return None
    speaker = withdrawn.get("speaker", kwargs.get("speaker"))
    return WithdrawnTurn(user, assistant, speaker if isinstance(speaker, str) and speaker else None)

"""Who asked for spoken replies: ``/voice on|off`` kept per person in the database.

The setting follows the person (``memory.people``): an account linked into a
person reads and writes the person's; a choice made by an account before it was
linked still counts until the person makes one.
"""

from __future__ import annotations

from memory.people import PeopleStore
from memory.preferences import PreferenceStore

__all__ = ["StoredVoiceChoice"]

VOICE_PREFERENCE = "voice_replies"
"""The person's setting (``memory.preferences``) that ``/voice on|off`` sets: "on" or "off"."""


class StoredVoiceChoice:
    """Sync (the stores are): async callers use ``asyncio.to_thread``."""

    def __init__(self, preferences: PreferenceStore, people: PeopleStore | None = None) -> None:
        self.preferences = preferences
        self._people = people

    def _person(self, account: str) -> str:
        return self._people.person_of(account) if self._people is not None else account

    def voice_on(self, account: str) -> bool:
        """Whether the person ``account`` belongs to asked for spoken replies (off unless
        they did)."""
        found = self.preferences.get([self._person(account), account], VOICE_PREFERENCE)
        return found == "on"

    def set_voice(self, account: str, on: bool, at: float) -> None:
        """``/voice on`` or ``/voice off`` for the person ``account`` belongs to."""
        self.preferences.set(self._person(account), VOICE_PREFERENCE, "on" if on else "off", at)

"""Spoken replies wired: the preferences table, ``SpokenReplies`` and ``/voice``."""

from __future__ import annotations

import asyncio

from agent.llm import LLMClient
from gateway.adapters import Replies
from gateway.clock import Clock
from gateway.commands import VoiceDesk
from gateway.config import LiveSettings
from gateway.media import SpokenReplies, StoredVoiceChoice
from memory.database import Location
from memory.people import PeopleStore
from memory.preferences import PreferenceStore

__all__ = ["open_voice"]


async def open_voice(
    live: LiveSettings,
    where: Location,
    llm: LLMClient,
    replies: Replies,
    people: PeopleStore,
    clock: Clock,
) -> VoiceDesk:
    """``/voice`` and the spoken replies of turns, over the people's preferences in the
    shared database (close ``desk.choice.preferences`` at shutdown)."""
    preferences = await asyncio.to_thread(PreferenceStore, where)
    choice = StoredVoiceChoice(preferences, people)
    spoken = SpokenReplies(
        lambda: (live.current.llm, live.current.media), llm, choice, replies.adapters
    )
    return VoiceDesk(choice, spoken, clock)

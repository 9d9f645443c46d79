"""What an agent is given: who and where it talks, its settings, and images sent to it."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from agent.messages import ImagePart
from agent.settings import AgentSettings, CompressionSettings, LLMSettings
from memory.paths import ChatRef, UserKey
from memory.settings import MemorySettings


@dataclass(frozen=True)
class ImageInput:
    """An image the user sent, for a model with vision."""

    data: bytes
    mime_type: str = "image/jpeg"

    def part(self) -> ImagePart:
        encoded = base64.b64encode(self.data).decode("ascii")
        return {
            "type": "image_url",
            "image_url": {"url": f"data:{self.mime_type};base64,{encoded}"},
        }


@dataclass(frozen=True)
class SessionContext:
    """Who and where: everything an agent knows about its session."""

    session_id: str
    user_key: UserKey
    """Whose profile and transcripts: the person, or the chat's own key in a shared session."""
    chat: ChatRef
    platform_hint: str | None = None
    """A line for the system prompt about the platform (its formatting, its habits)."""
    is_direct: bool | None = None
    """A one-to-one chat (None: not known)."""
    parent_session_id: str | None = None
    """The session of the same conversation this one follows (after /new or expiry)."""
    started_because: str | None = None
    """Why the parent session ended (``"new"``, ``"idle"``, ``"daily"``, ...)."""
    follows_previous: bool = False
    """The session continues a conversation: made without ``parent_session_id``, it gets
    the latest ended session of its user in its chat and thread as its parent, looked up
    as it is opened (``Agent.start``), which then fills in the two fields above."""
    account: UserKey | None = None
    """The platform account the session is with, when ``user_key`` is a person several
    accounts are linked into (``person:…``); admin rights and tool rules follow it."""
    search_keys: tuple[str, ...] = ()
    """Further keys whose transcripts ``session_search`` covers: the person's accounts."""

    @property
    def actor(self) -> UserKey:
        """Who acts in the session: the account when it is known, else ``user_key``."""
        return self.account if self.account is not None else self.user_key

    @property
    def platform(self) -> str:
        return self.chat.platform

    @property
    def chat_id(self) -> str:
        return self.chat.chat_id

    @property
    def thread_id(self) -> str | None:
        return self.chat.thread_id


@dataclass
class AgentConfig:
    llm: LLMSettings = field(default_factory=LLMSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    compression: CompressionSettings = field(default_factory=CompressionSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)

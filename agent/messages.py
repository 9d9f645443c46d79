"""The chat messages a history holds and a request sends, in the OpenAI chat format.

One ``TypedDict`` per role, shaped like the ``openai`` client's message params
(``ChatCompletion*MessageParam``) for the keys chorus writes: ``content`` is text
or a list of content parts (images in a user message, cache markers in a
request copy), an assistant message may carry ``tool_calls`` instead of text, a
tool result answers one call by ``tool_call_id``. ``cache_control`` is the
prompt-caching marker Anthropic-compatible endpoints read; only request copies
carry it (``agent.caching``), never a stored history.

Messages rebuilt from a transcript come from ``memory.transcripts``'
``StoredMessage.to_openai()``; memory providers take them as plain dicts
(``as_plain``), as the memory layer cannot know these types.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, cast

from memory.transcripts import StoredMessage

__all__ = [
    "AssistantMessage",
    "CacheControl",
    "ChatMessage",
    "ContentPart",
    "FunctionCall",
    "ImagePart",
    "ImageURL",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "as_plain",
    "transcript_messages",
]


class CacheControl(TypedDict):
    type: Literal["ephemeral"]
    ttl: NotRequired[Literal["5m", "1h"]]


class TextPart(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ImageURL(TypedDict):
    url: str
    """A ``data:`` URL carrying the image."""
    detail: NotRequired[Literal["auto", "low", "high"]]


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageURL
    cache_control: NotRequired[CacheControl]


ContentPart: TypeAlias = TextPart | ImagePart


class FunctionCall(TypedDict):
    name: str
    arguments: str
    """JSON text, as the model wrote it (not necessarily valid)."""


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str | list[ContentPart]
    cache_control: NotRequired[CacheControl]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[ContentPart]
    """The person's text, or image parts with it. The recalled context or memory nudge
    of a turn goes only into that turn's requests (``agent.history.TurnNote``); the
    text as written is also kept beside the message (``agent.history.RawTexts``)."""
    cache_control: NotRequired[CacheControl]


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | list[ContentPart] | None
    """None when the message only calls tools."""
    tool_calls: NotRequired[list[ToolCall]]
    cache_control: NotRequired[CacheControl]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str | list[ContentPart]
    name: NotRequired[str]
    """The tool's name; set on messages rebuilt from a transcript."""
    cache_control: NotRequired[CacheControl]


ChatMessage: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def transcript_messages(stored: Iterable[StoredMessage]) -> list[ChatMessage]:
    """Stored messages as chat messages, in order (``StoredMessage.to_openai()``)."""
    return [cast("ChatMessage", message.to_openai()) for message in stored]


def as_plain(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The messages (the same objects, in a new list) typed as the memory layer takes them."""
    return cast("list[dict[str, Any]]", list(messages))

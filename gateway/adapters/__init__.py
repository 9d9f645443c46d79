"""Platform adapters: each turns one platform's updates into ``InboundMessage``s.

Adapters only enqueue: they hand messages to the runner's handler and never
import the runner, the agent or memory. Outbound, ``ReplyStream`` and
``send_text`` deliver replies through any adapter: split at the platform's
limit, streamed by edits where it allows them. A platform's failure leaves
``send``/``edit``/``typing``/``publish_commands`` as an ``AdapterError`` (see
``gateway.errors``), raised from the SDK's own error.

Each name is imported on first use, so that reading the settings (which need only
``PLATFORMS``) does not load the web server every adapter can serve on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway._lazy import lazy_names

if TYPE_CHECKING:
    from gateway.adapters._base import AdapterCapabilities, BaseAdapter, CommandInfo
    from gateway.adapters._console import ConsoleAdapter
    from gateway.adapters._delivery import WITHDRAWN_TEXT, ReplyStream, send_text
    from gateway.adapters._intake import Intake, MessageHandler, RouteHandler, SharedBudgets
    from gateway.adapters._registry import PLATFORMS, enable_hints, enabled_adapters, platform_spec
    from gateway.adapters._replies import Replies
    from gateway.adapters._spec import PlatformContext, PlatformSpec
    from gateway.adapters._support import Backoff, ChatLanes, SeenSet, retrying
    from gateway.adapters._testchat import Delivered, TestChatAdapter
    from gateway.adapters._text_split import Length, split_text, utf16_length
    from gateway.errors import (
        AdapterError,
        ChatForbidden,
        FileRefused,
        MessageNotFound,
        PlatformUnreachable,
        RateLimited,
    )

__all__ = [
    "PLATFORMS",
    "WITHDRAWN_TEXT",
    "AdapterCapabilities",
    "AdapterError",
    "Backoff",
    "BaseAdapter",
    "ChatForbidden",
    "ChatLanes",
    "CommandInfo",
    "ConsoleAdapter",
    "Delivered",
    "FileRefused",
    "Intake",
    "Length",
    "MessageHandler",
    "MessageNotFound",
    "PlatformContext",
    "PlatformSpec",
    "PlatformUnreachable",
    "RateLimited",
    "Replies",
    "ReplyStream",
    "RouteHandler",
    "SeenSet",
    "SharedBudgets",
    "TestChatAdapter",
    "enable_hints",
    "enabled_adapters",
    "platform_spec",
    "retrying",
    "send_text",
    "split_text",
    "utf16_length",
]


_HOME = {
    "AdapterCapabilities": ("gateway.adapters._base", "AdapterCapabilities"),
    "BaseAdapter": ("gateway.adapters._base", "BaseAdapter"),
    "CommandInfo": ("gateway.adapters._base", "CommandInfo"),
    "Intake": ("gateway.adapters._intake", "Intake"),
    "MessageHandler": ("gateway.adapters._intake", "MessageHandler"),
    "RouteHandler": ("gateway.adapters._intake", "RouteHandler"),
    "SharedBudgets": ("gateway.adapters._intake", "SharedBudgets"),
    "ConsoleAdapter": ("gateway.adapters._console", "ConsoleAdapter"),
    "WITHDRAWN_TEXT": ("gateway.adapters._delivery", "WITHDRAWN_TEXT"),
    "ReplyStream": ("gateway.adapters._delivery", "ReplyStream"),
    "send_text": ("gateway.adapters._delivery", "send_text"),
    "PLATFORMS": ("gateway.adapters._registry", "PLATFORMS"),
    "enable_hints": ("gateway.adapters._registry", "enable_hints"),
    "enabled_adapters": ("gateway.adapters._registry", "enabled_adapters"),
    "platform_spec": ("gateway.adapters._registry", "platform_spec"),
    "Replies": ("gateway.adapters._replies", "Replies"),
    "PlatformContext": ("gateway.adapters._spec", "PlatformContext"),
    "PlatformSpec": ("gateway.adapters._spec", "PlatformSpec"),
    "Backoff": ("gateway.adapters._support", "Backoff"),
    "ChatLanes": ("gateway.adapters._support", "ChatLanes"),
    "SeenSet": ("gateway.adapters._support", "SeenSet"),
    "retrying": ("gateway.adapters._support", "retrying"),
    "Delivered": ("gateway.adapters._testchat", "Delivered"),
    "TestChatAdapter": ("gateway.adapters._testchat", "TestChatAdapter"),
    "Length": ("gateway.adapters._text_split", "Length"),
    "split_text": ("gateway.adapters._text_split", "split_text"),
    "utf16_length": ("gateway.adapters._text_split", "utf16_length"),
    "AdapterError": ("gateway.errors", "AdapterError"),
    "ChatForbidden": ("gateway.errors", "ChatForbidden"),
    "FileRefused": ("gateway.errors", "FileRefused"),
    "MessageNotFound": ("gateway.errors", "MessageNotFound"),
    "PlatformUnreachable": ("gateway.errors", "PlatformUnreachable"),
    "RateLimited": ("gateway.errors", "RateLimited"),
}
"""Where each name of ``__all__`` is defined; imported on first use."""


__getattr__ = lazy_names(__name__, _HOME, globals())

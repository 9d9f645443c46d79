"""Platform adapters: each turns one platform's updates into ``InboundMessage``s.

Adapters only enqueue: they hand messages to the runner's handler and never
import the runner, the agent or memory. Outbound, ``ReplyStream`` and
``send_text`` deliver replies through any adapter: split at the platform's
limit, streamed by edits where it allows them. A platform's failure leaves
``send``/``edit``/``typing``/``publish_commands`` as an ``AdapterError`` (see
``gateway.errors``), raised from the SDK's own error.
"""

from gateway.adapters._base import (
    AdapterCapabilities,
    BaseAdapter,
    CommandInfo,
    Intake,
    MessageHandler,
    RouteHandler,
    SharedBudgets,
)
from gateway.adapters._console import ConsoleAdapter
from gateway.adapters._delivery import WITHDRAWN_TEXT, ReplyStream, send_text
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

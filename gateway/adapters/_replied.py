"""The message a person replies to, given with their message as context.

Every platform's adapter finds the replied-to message its own way (Telegram's
``reply_to_message``, Discord's ``message_reference``, a Slack thread's parent),
always within the same chat; this module decides how it travels: someone else's
words as others' content (``quoted``, fenced for the model), the sender's own as
plain context (``in_reply_to``). The text is trimmed. A reply to one of the bot's
own answers carries nothing more: the answer is in the conversation already.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from gateway.events import InboundMessage, Quoted

MAX_REPLIED_CHARS = 1000
"""Characters of the replied-to message given with the reply."""

Writer = Literal["sender", "bot", "other"]


def with_replied(message: InboundMessage, writer: Writer, author: str, text: str) -> InboundMessage:
    """``message`` carrying the replied-to message ``text`` by ``author`` (who is ``writer``)."""
    text = text.strip()
    if not text or writer == "bot":
        return message
    if len(text) > MAX_REPLIED_CHARS:
        text = text[:MAX_REPLIED_CHARS].rstrip() + " …"
    if writer == "other":
        return replace(message, quoted=(*message.quoted, Quoted("reply", author, text)))
    return replace(message, in_reply_to=Quoted("reply", author or "the sender", text))

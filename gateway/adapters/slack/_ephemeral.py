"""Answers for one person in a channel: ``chat.postEphemeral``, seen by them alone.

Slack shows an ephemeral message to the one user named, in the channel (in the
thread when the command came in one); it is not stored and nobody else sees it.
Slack refuses it when that person is not in the channel (``user_not_in_channel``,
a ``ChatForbidden``).
"""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._text_split import split_text
from gateway.adapters.slack._errors import platform_errors
from gateway.adapters.slack._format import to_mrkdwn
from gateway.events import InboundMessage

__all__ = ["post_ephemeral"]


async def post_ephemeral(
    client: AsyncWebClient, msg: InboundMessage, text: str, limit: int
) -> None:
    """Show ``text`` to ``msg``'s sender alone, in its channel, split at ``limit``."""
    # a top-level message's thread_id is its own ts: the answer shows in the channel then
    in_thread = msg.thread_id if msg.thread_id and msg.thread_id != msg.message_id else None
    for part in split_text(text, limit):
        with platform_errors():
            await client.chat_postEphemeral(
                channel=msg.chat_id, user=msg.user_id, text=to_mrkdwn(part), thread_ts=in_thread
            )

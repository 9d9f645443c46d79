"""Slack events to chorus messages: once each, in order per channel, with what a session needs.

``take()`` runs in bolt's listener, after the delivery was recorded and acked:
repeated deliveries (by ``event_id``) and the second event of one message (a
``message`` and an ``app_mention``) are dropped, the rest is handed over in
order within its channel. Before the hand-over a message gets:

- **thread membership**: a reply in a thread the bot has answered in counts as
  addressed to it, without a new mention (known from the bot's own posts, and
  after a restart from the thread's history, remembered a while);
- **thread context**: the first message seen in an existing thread carries the
  thread's earlier messages as others' words (``quoted``), with people's names;
- **the thread's parent**: a person's first message to the bot in a thread, when
  it comes without the thread's context (someone asked there before), carries the
  message that started the thread, when someone else wrote it, as the replied-to
  message (``gateway.adapters._replied``);
- **names**: the sender's display name, and people it mentions as ``@Name``
  rather than their id (``users.info``, cached; an unknown person stays ``@U…``);
- **images**: with ``llm.vision``, the image files shared with it;
- **files**: voice clips, audio files and documents, downloaded when read.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._base import BaseAdapter
from gateway.adapters._replied import with_replied
from gateway.adapters._support import ChatLanes, RecentValues, SeenSet
from gateway.adapters.slack._client import error_code
from gateway.adapters.slack._events import (
    BotIdentity,
    by_bot,
    file_url,
    files_of,
    inbound_from,
    mentioned_people,
    thread_context,
)
from gateway.adapters.slack._files import FileFetcher, images_to_fetch
from gateway.adapters.slack._format import from_slack
from gateway.adapters.slack._names import UserNames
from gateway.adapters.slack._retractions import retraction_from
from gateway.clock import Clock
from gateway.events import READ_KINDS, FileFetch, InboundMessage

logger = logging.getLogger(__name__)


def event_receipt(event_id: str) -> str:
    """The inbox receipt of an event: its id as ASCII (a lone surrogate stays storable)."""
    return json.dumps(event_id)[1:-1]


THREAD_CONTEXT_MESSAGES = 20
"""Earlier messages of a thread quoted to a session that starts cold in it."""
REPLIES_PAGE = 200
REPLIES_PAGES = 3
"""Pages of ``conversations.replies`` read at most for one thread."""
REMEMBERED = 10_000
"""Event ids, message ids and threads remembered (each, most recent first)."""
MEMBER_TTL = 7 * 86400.0
NOT_MEMBER_TTL = 600.0
"""Seconds a thread the bot is (not) in is remembered before its history is read again."""


class SlackInbound:
    def __init__(
        self,
        adapter: BaseAdapter,
        client: AsyncWebClient,
        *,
        names: UserNames,
        fetcher: FileFetcher | None,
        vision: bool = False,
        context_messages: int = THREAD_CONTEXT_MESSAGES,
        clock: Clock | None = None,
    ) -> None:
        self._adapter = adapter
        self._client = client
        self._names = names
        self._fetcher = fetcher
        self._vision = vision
        self._context_messages = context_messages
        self._event_ids = SeenSet(REMEMBERED)
        self._message_ids = SeenSet(REMEMBERED)
        self._threads = SeenSet(REMEMBERED)
        self._parents_given = SeenSet(REMEMBERED)
        self._member: RecentValues[bool] = RecentValues(REMEMBERED, ttl=MEMBER_TTL, clock=clock)
        self._not_member: RecentValues[bool] = RecentValues(
            REMEMBERED, ttl=NOT_MEMBER_TTL, clock=clock
        )
        self._lanes = ChatLanes("slack")
        self.me: BotIdentity | None = None

    def answered_in(self, chat_id: str, thread_id: str) -> None:
        """The bot posted in this thread: its later messages are for the bot."""
        self._member.put((chat_id, thread_id), True)  # looked at before ``_not_member``

    async def take(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        me = self.me
        if me is None:
            return
        event_id = str(body.get("event_id") or "")
        receipts = (event_receipt(event_id),) if event_id else ()
        if event_id and not self._event_ids.add(event_id):
            logger.debug("slack: dropped a repeated delivery of event %s", event_id)
            return
        retraction = retraction_from(event, me)
        if retraction is not None:
            await self._adapter.settled(receipts)
            await self._adapter.retracted(retraction)
            return
        message = inbound_from(event, me)
        if message is None or not self._message_ids.add((message.chat_id, message.message_id)):
            await self._adapter.settled(receipts)  # not for us, or the other event of a message
            return
        logger.debug("slack message %s in %s", message.message_id, message.chat_id)
        message = replace(message, receipts=receipts)

        async def hand_over() -> None:
            await self._adapter.deliver(await self.complete(message, event, me))

        self._lanes.submit(message.chat_id, hand_over)

    async def read_again(self, payload: str) -> InboundMessage | None:
        """A recorded event, read as if it had just arrived (for a restart)."""
        me = self.me
        if me is None:
            raise RuntimeError("slack is not connected yet")
        event = json.loads(payload).get("event")
        message = inbound_from(event, me) if isinstance(event, dict) else None
        if message is None or not isinstance(event, dict):
            return None
        self._message_ids.add((message.chat_id, message.message_id))
        return await self.complete(message, event, me)

    async def complete(
        self, message: InboundMessage, event: dict[str, Any], me: BotIdentity
    ) -> InboundMessage:
        """``message`` with its thread membership, thread context, names and images."""
        message = await self._with_mentions(message, event, me)
        replies: list[dict[str, Any]] | None = None
        thread = message.thread_id
        in_thread = thread is not None and thread != message.message_id and not message.is_direct
        if in_thread and thread is not None and not message.mentions_bot:
            member, replies = await self._in_thread(message.chat_id, thread, me)
            if member:
                message = replace(message, reply_to_bot=True)
        addressed = message.is_direct or message.mentions_bot or message.reply_to_bot
        if (
            thread is not None
            and addressed
            and self._threads.add((message.chat_id, thread))
            and thread != message.message_id
        ):
            if replies is None:
                replies = await self._replies(message.chat_id, thread)
            recent = [r for r in replies if not by_bot(r, me)][-self._context_messages :]
            people = [str(r.get("user") or "") for r in recent]
            people += [u for r in recent for u in mentioned_people(r, me)]
            names = await self._names.names(people)
            context = thread_context(
                replies,
                before_ts=message.message_id,
                me=me,
                limit=self._context_messages,
                names=names,
            )
            if context:
                message = replace(message, quoted=context)
        if (
            addressed
            and in_thread
            and thread is not None
            and self._parents_given.add((message.chat_id, thread, message.user_id))
            and not message.quoted
        ):
            message = await self._with_parent(message, thread, replies, me)
        if not message.user_name:
            message = replace(message, user_name=await self._names.name(message.user_id))
        else:
            self._names.remember(message.user_id, message.user_name)
        if addressed and self._fetcher is not None:
            if self._vision:
                message = await self._with_images(message, event)
            message = self._with_fetching(message, event, self._fetcher)
        return message

    async def _with_mentions(
        self, message: InboundMessage, event: dict[str, Any], me: BotIdentity
    ) -> InboundMessage:
        """``message`` whose ``<@U…>`` mentions of people read as their names."""
        people = mentioned_people(event, me)
        names = await self._names.names(people) if people else {}
        named = inbound_from(event, me, names) if names else None
        return replace(message, text=named.text) if named is not None else message

    async def _with_parent(
        self,
        message: InboundMessage,
        thread: str,
        replies: list[dict[str, Any]] | None,
        me: BotIdentity,
    ) -> InboundMessage:
        """``message`` with the message that started its thread (of the same channel)."""
        parent = next((r for r in replies or () if r.get("ts") == thread), None)
        if parent is None:
            try:
                answer = await self._client.conversations_replies(
                    channel=message.chat_id, ts=thread, limit=1
                )
            except (SlackApiError, ClientError, TimeoutError, OSError) as exc:
                logger.warning("slack: a thread's first message was not read (%s)", exc)
                return message
            found = [m for m in answer.get("messages") or () if isinstance(m, dict)]
            parent = next((m for m in found if m.get("ts") == thread), None)
        if parent is None:
            return message
        author = str(parent.get("user") or "")
        if by_bot(parent, me) or author == message.user_id:
            return message  # the bot's, or the sender's own: in their conversation already
        names = await self._names.names([author, *mentioned_people(parent, me)])
        text = from_slack(str(parent.get("text") or ""), names)
        return with_replied(message, "other", names.get(author) or author, text)

    def _with_fetching(
        self, message: InboundMessage, event: dict[str, Any], fetcher: FileFetcher
    ) -> InboundMessage:
        """``message`` whose voice clips, audio files and documents download when read."""
        attachments = list(message.attachments)
        for index, file in enumerate(files_of(event)):
            url = file_url(file)
            if index < len(attachments) and attachments[index].kind in READ_KINDS and url:
                attachments[index] = replace(attachments[index], fetch=_fetch_of(fetcher, url))
        return replace(message, attachments=tuple(attachments))

    async def _in_thread(
        self, chat_id: str, thread: str, me: BotIdentity
    ) -> tuple[bool, list[dict[str, Any]] | None]:
        key = (chat_id, thread)
        if self._member.get(key):
            return True, None
        if self._not_member.get(key) is not None:
            return False, None
        replies = await self._replies(chat_id, thread)
        member = any(by_bot(r, me) for r in replies)
        if member:
            self._member.put(key, True)
        else:
            self._not_member.put(key, False)
        return member, replies

    async def _replies(self, chat_id: str, thread: str) -> list[dict[str, Any]]:
        replies: list[dict[str, Any]] = []
        cursor: str | None = None
        try:
            for _ in range(REPLIES_PAGES):
                answer = await self._client.conversations_replies(
                    channel=chat_id, ts=thread, limit=REPLIES_PAGE, cursor=cursor
                )
                replies.extend(m for m in answer.get("messages") or () if isinstance(m, dict))
                cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
                if not cursor:
                    break
        except SlackApiError as exc:
            logger.warning("slack: reading a thread's history failed (%s)", error_code(exc))
        except (ClientError, TimeoutError, OSError) as exc:
            logger.warning("slack: reading a thread's history failed (%s)", type(exc).__name__)
        return replies

    async def _with_images(self, message: InboundMessage, event: dict[str, Any]) -> InboundMessage:
        fetcher = self._fetcher
        if fetcher is None:
            return message
        attachments = list(message.attachments)
        for index, url in images_to_fetch(files_of(event)):
            data = await fetcher.fetch(url)
            if data is not None and index < len(attachments):
                attachments[index] = replace(attachments[index], data=data, size=len(data))
        return replace(message, attachments=tuple(attachments))


def _fetch_of(fetcher: FileFetcher, url: str) -> FileFetch:
    async def fetch(limit: int) -> bytes | None:
        return await fetcher.fetch(url, limit=limit, image=False)

    return fetch

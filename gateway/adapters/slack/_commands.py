"""The app's one slash command (``/chorus …``) as a chorus command, and its answer back.

``/chorus whoami`` reaches the runner as ``/whoami``, ``/chorus admin sessions``
as ``/admin sessions``; ``/chorus`` alone is ``/help``. It acts on the caller's
session in the channel it was typed in (a DM or a channel: Slack does not say
which thread: Slack takes no slash command typed in a thread). In a thread,
``@chorus /chorus new``, ``@chorus /new`` or ``@chorus new`` is that thread's command
(``typed_command``). The answer is for the caller only, so the text the commands
write ("send /help") is spelled the way Slack users type it ("/chorus help").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond

from gateway.adapters._text_split import split_text
from gateway.adapters.slack._actions import is_review_listing, review_blocks
from gateway.adapters.slack._events import PLATFORM
from gateway.adapters.slack._format import to_mrkdwn
from gateway.adapters.slack._names import UserNames
from gateway.adapters.slack._review_cards import ReviewCards, new_card
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

MAX_ARGS_CHARS = 4000
COMMAND_PARTS = 5
"""Messages one command answer may take (a ``response_url`` takes five)."""
NO_CALLER = "That command came without a user or a channel, so I cannot answer it."


def command_message(body: Mapping[str, Any], *, user_name: str = "") -> InboundMessage | None:
    """The command in a slash-command payload, or None when it names no user or channel."""
    user, channel = body.get("user_id"), body.get("channel_id")
    if not isinstance(user, str) or not user or not isinstance(channel, str) or not channel:
        return None
    raw = body.get("text")
    args = raw.strip() if isinstance(raw, str) else ""
    args = args.removeprefix("/").strip()[:MAX_ARGS_CHARS]
    trigger = body.get("trigger_id")
    direct = channel.startswith("D") or body.get("channel_name") == "directmessage"
    return InboundMessage(
        platform=PLATFORM,
        chat_id=channel,
        user_id=user,
        text="/" + (args or "help"),
        message_id=f"command:{trigger}" if isinstance(trigger, str) and trigger else "command",
        user_name=user_name or str(body.get("user_name") or ""),
        is_direct=direct,
        mentions_bot=not direct,
    )


def typed_command(
    text: str, slash_command: str, names: Iterable[str], *, mentioned: bool
) -> str | None:
    """A command typed in a message to the bot (``@chorus …``, where Slack takes no slash
    command: in threads) as chorus reads it, or None when the text is no command.

    ``/chorus new`` reads as ``/new`` (``/chorus`` alone as ``/help``), and a message that
    ``mentioned`` the bot with one command name alone (``@chorus new``) as that command;
    ``/new`` stays as it is. Anything longer without a slash is a message to the model.
    """
    stripped = text.strip()
    head, _, rest = stripped.partition(" ")
    if head.lower() == slash_command:
        return "/" + (rest.strip().removeprefix("/").strip() or "help")
    known = {n.lower() for n in names}
    if mentioned and stripped and " " not in stripped and stripped.lower() in known:
        return "/" + stripped.lower()
    return None


def native_spelling(text: str, names: Iterable[str], slash_command: str) -> str:
    """``text`` with each ``/name`` of a chorus command written ``/chorus name``."""
    known = sorted({n for n in names if n}, key=len, reverse=True)
    if not known:
        return text
    pattern = re.compile(r"(?<![\w/<])/(" + "|".join(map(re.escape, known)) + r")\b")
    return pattern.sub(lambda m: f"{slash_command} {m.group(1)}", text)


async def answer_slash(
    body: Mapping[str, Any],
    respond: AsyncRespond,
    *,
    answer: Callable[[InboundMessage], Awaitable[str]],
    names: UserNames,
    command_names: Iterable[str],
    slash_command: str,
    limit: int,
    cards: ReviewCards | None = None,
) -> None:
    """Run the command in ``body`` and post its answer, ephemeral, to its ``response_url``."""
    user = body.get("user_id")
    name = await names.name(user) if isinstance(user, str) else ""
    message = command_message(body, user_name=name)
    if message is None:
        logger.warning("slack: a slash command without a user or channel was refused")
        text = NO_CALLER
    else:
        text = await answer(message)
    known = tuple(command_names)
    spelled = native_spelling(text, known, slash_command)
    blocks = None
    card = new_card() if cards is not None else ""
    if message and is_review_listing(message.text):
        spell = lambda line: native_spelling(line, known, slash_command)  # noqa: E731
        blocks = review_blocks(text, spell, card=card)
    if blocks is not None:  # each staged write with its Approve / Reject buttons
        if cards is not None:
            cards.sent(card, blocks)
        fallback = split_text(to_mrkdwn(spelled), limit)[0]
        reply = await respond(text=fallback, blocks=blocks, response_type="ephemeral")
        if reply.status_code != 200:
            logger.warning("slack: answering a command failed (HTTP %s)", reply.status_code)
        return
    for part in split_text(to_mrkdwn(spelled), limit)[:COMMAND_PARTS]:
        reply = await respond(text=part, response_type="ephemeral")
        if reply.status_code != 200:
            logger.warning("slack: answering a command failed (HTTP %s)", reply.status_code)
            return

"""Inline keyboard buttons: a press is the command the button stands for.

``send_choice`` puts the buttons under a message, each carrying its command
(``/approve ab3k9z``) as ``callback_data``. A press arrives as a
``callback_query`` update; it runs as that command from whoever pressed it,
through the same authorization and dispatch as a native command, and the answer
shows to the presser alone (``answerCallbackQuery``), never in the chat.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.constants import ChatType
from telegram.error import TelegramError

from gateway.adapters.telegram._updates import PLATFORM
from gateway.events import InboundMessage, SentMessage

__all__ = ["ANSWER_CHARS", "answer_press", "close_keyboard", "keyboard", "press_message"]

logger = logging.getLogger(__name__)

ANSWER_CHARS = 200
"""The longest text ``answerCallbackQuery`` shows."""
DATA_BYTES = 64


def keyboard(choices: Sequence[tuple[str, str]]) -> InlineKeyboardMarkup:
    """One row of buttons ``(label, command)``; a command too long for a button is left out."""
    row = [
        InlineKeyboardButton(label, callback_data=command)
        for label, command in choices
        if 1 <= len(command.encode()) <= DATA_BYTES
    ]
    return InlineKeyboardMarkup([row])


def press_message(query: CallbackQuery) -> InboundMessage | None:
    """The command a press stands for, from the presser; None when it is not one of ours."""
    data = query.data or ""
    message = query.message
    user = query.from_user
    if not data.startswith("/") or message is None or user is None or user.is_bot:
        return None
    chat = message.chat
    direct = chat.type == ChatType.PRIVATE
    return InboundMessage(
        platform=PLATFORM,
        chat_id=str(chat.id),
        user_id=str(user.id),
        text=data,
        message_id=f"button:{query.id}",
        user_name=user.full_name or user.username or "",
        is_direct=direct,
        mentions_bot=not direct,
    )


async def answer_press(
    bot: Bot, query: CallbackQuery, answer: Callable[[InboundMessage], Awaitable[str]]
) -> None:
    """Run the press as its command; its answer shows to the presser alone."""
    message = press_message(query)
    text = "" if message is None else await answer(message)
    try:
        await bot.answer_callback_query(query.id, text=text[:ANSWER_CHARS] or None)
    except TelegramError as exc:
        logger.info("telegram: a button press was not answered (%s)", type(exc).__name__)


async def close_keyboard(bot: Bot, sent: SentMessage, text: str) -> Message | bool:
    """``editMessageText`` as plain text without ``reply_markup``: the keyboard goes."""
    return await bot.edit_message_text(
        text, chat_id=int(sent.chat_id), message_id=int(sent.message_id)
    )

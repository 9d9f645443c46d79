"""Text between the model's Markdown and Slack's ``mrkdwn``, both ways.

Outbound, ``to_mrkdwn`` converts the common Markdown the model writes: ``**bold**``
→ ``*bold*``, ``*italic*`` → ``_italic_``, ``~~strike~~`` → ``~strike~``, headings
→ bold lines, ``- item`` → ``• item``, ``[text](url)`` → ``<url|text>``; code spans
and fenced blocks keep their content as it is. ``&``, ``<`` and ``>`` are escaped
everywhere, as Slack requires, so text can never turn into a mention or a link.

Inbound, ``from_slack`` turns Slack's markup back into plain text: user and
channel references, links, and the escaped ``&``, ``<`` and ``>``. A person
mentioned as ``<@U1>`` reads as ``@Name`` when ``names`` knows them (``unnamed_users``
says whom to look up), else as ``@U1``; ``<@U1|name>`` and ``<#C1|name>`` carry their
name already.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.DOTALL)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.MULTILINE)

_BOLD_MARK = "\x01"
_CODE_MARK = "\x02"

_USER_REF = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL_REF = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL_REF = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")
_URL_REF = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")


def escape(text: str) -> str:
    """Slack's three control characters, escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def to_mrkdwn(markdown: str) -> str:
    """The model's Markdown as Slack ``mrkdwn``."""
    codes: list[str] = []

    def keep(code: str) -> str:
        codes.append(code)
        return f"{_CODE_MARK}{len(codes) - 1}{_CODE_MARK}"

    text = _FENCE.sub(lambda m: keep("```\n" + escape(m.group(1).rstrip("\n")) + "\n```"), markdown)
    text = _INLINE_CODE.sub(lambda m: keep("`" + escape(m.group(1)) + "`"), text)
    text = escape(text)
    text = _LINK.sub(lambda m: keep(f"<{m.group(2)}|{_inline(m.group(1))}>"), text)
    text = _inline(text)
    text = _HEADING.sub(lambda m: f"{_BOLD_MARK}{m.group(1).strip('*')}{_BOLD_MARK}", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = text.replace(_BOLD_MARK, "*")
    return re.sub(f"{_CODE_MARK}(\\d+){_CODE_MARK}", lambda m: codes[int(m.group(1))], text)


def _inline(text: str) -> str:
    text = _BOLD.sub(lambda m: f"{_BOLD_MARK}{m.group(1) or m.group(2)}{_BOLD_MARK}", text)
    text = _ITALIC.sub(lambda m: f"_{m.group(1)}_", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    return text.replace(_BOLD_MARK, "*")


def mention_pattern(bot_user_id: str) -> re.Pattern[str]:
    """``<@BOT>`` (with an optional ``|name``) and the space after it."""
    return re.compile(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>[ \t]?")


def unnamed_users(text: str) -> list[str]:
    """Ids of the people mentioned in ``text`` without a name (``<@U1>``), once each."""
    return list(dict.fromkeys(m.group(1) for m in _USER_REF.finditer(text) if not m.group(2)))


def from_slack(text: str, names: Mapping[str, str] | None = None) -> str:
    """Slack message text as plain text: ``<@U1>`` → ``@Name`` (from ``names``) or ``@U1``,
    links as their text and URL."""
    known = names or {}
    text = _USER_REF.sub(
        lambda m: "@" + (m.group(2) or known.get(m.group(1)) or m.group(1)),
        text,
    )
    text = _CHANNEL_REF.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL_REF.sub(lambda m: "@" + m.group(1), text)
    text = _URL_REF.sub(_url_text, text)
    return unescape(text)


def _url_text(match: re.Match[str]) -> str:
    url, label = match.group(1), match.group(2)
    if not label or label == url:
        return url
    return f"{label} ({url})"

"""Bot API data for ``FakeTelegram``: request parsing, errors, entities, chats."""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

TOKEN = "123456:TEST-fake-token-value"
BOT_ID = 777_000
BOT_USERNAME = "chorus_test_bot"

# parameters PTB sends JSON-encoded inside form fields
_JSON_FIELDS = frozenset(
    {
        "entities",
        "caption_entities",
        "reply_parameters",
        "reply_markup",
        "link_preview_options",
        "commands",
        "scope",
        "allowed_updates",
    }
)
_ENTITY_TYPES = frozenset(
    {
        "mention",
        "hashtag",
        "cashtag",
        "bot_command",
        "url",
        "email",
        "phone_number",
        "bold",
        "italic",
        "underline",
        "strikethrough",
        "spoiler",
        "blockquote",
        "expandable_blockquote",
        "code",
        "pre",
        "text_link",
        "text_mention",
        "custom_emoji",
    }
)
_TOKEN_RE = re.compile(r"(?<![\w@/])([/@])([A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?)")


class ApiError(Exception):
    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None):
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "ok": False,
            "error_code": self.code,
            "description": self.description,
        }
        if self.parameters:
            body["parameters"] = self.parameters
        return body


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


async def parse_params(request: web.Request) -> dict[str, Any]:
    """The method's parameters from the query string and a JSON, form or multipart body."""
    params: dict[str, Any] = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            body = await request.json()
            if isinstance(body, dict):
                params.update(body)
        else:
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, str):
                    params[key] = value
                else:  # an uploaded file: its bytes, and its name under ``_filenames``
                    params[key] = value.file.read()
                    params.setdefault("_filenames", {})[key] = value.filename
    for key in _JSON_FIELDS & params.keys():
        if isinstance(params[key], str):
            params[key] = json.loads(params[key])
    return params


def validate_entities(text: str, entities: list[dict[str, Any]]) -> None:
    """Telegram's checks: a known type and a range inside the text (UTF-16 units)."""
    size = utf16_len(text)
    for entity in entities:
        if entity.get("type") not in _ENTITY_TYPES:
            raise ApiError(400, f"Bad Request: can't parse entities: bad type {entity.get('type')}")
        offset, length = int(entity["offset"]), int(entity["length"])
        if offset < 0 or length <= 0 or offset + length > size:
            raise ApiError(400, "Bad Request: can't parse entities: entity is out of the text")


def auto_entities(text: str) -> list[dict[str, Any]]:
    """The ``bot_command`` and ``mention`` entities Telegram adds to a person's text."""
    entities = []
    for match in _TOKEN_RE.finditer(text):
        offset = utf16_len(text[: match.start()])
        length = utf16_len(match.group(0))
        if match.group(1) == "/":
            if match.start() == 0:
                entities.append({"type": "bot_command", "offset": offset, "length": length})
        elif "@" not in match.group(2):
            entities.append({"type": "mention", "offset": offset, "length": length})
    return entities


def chat_for(sender: dict[str, Any], chat_id: int | None, forum: bool) -> dict[str, Any]:
    if chat_id is None:
        return {"id": sender["id"], "type": "private", "first_name": sender["first_name"]}
    chat: dict[str, Any] = {"id": chat_id, "type": "supergroup", "title": "Team"}
    if forum:
        chat["is_forum"] = True
    return chat

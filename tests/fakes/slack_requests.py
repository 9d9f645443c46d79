"""Requests Slack sends to an app over HTTP, signed as Slack signs them.

``post_event()`` sends an Events API ``event_callback`` (JSON), ``post_command()``
a slash command (a form body), both signed ``v0`` HMAC-SHA256 over
``v0:{timestamp}:{body}`` with the app's signing secret, optionally marked as a
retry. ``event_callback()`` and ``command_payload()`` build the bodies; the
Socket Mode fake sends the same bodies inside its envelopes.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp

SIGNING_SECRET = "fake-signing-secret-7d1e9c"
BOT_USER_ID = "UBOT0001"
TEAM_ID = "TTEAM001"
APP_ID = "AAPP0001"

_event_ids = itertools.count(1)
_triggers = itertools.count(1)


def sign(body: str, timestamp: str, secret: str = SIGNING_SECRET) -> str:
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def event_callback(event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    """``event`` wrapped as the Events API delivers it."""
    return {
        "token": "unused-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_event_ids):08d}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


def command_payload(
    text: str,
    *,
    user: str,
    channel: str,
    response_url: str,
    command: str = "/chorus",
    user_name: str = "",
) -> dict[str, str]:
    """A slash command as Slack sends it (the fields of its form body)."""
    return {
        "token": "unused-verification-token",
        "team_id": TEAM_ID,
        "team_domain": "fake",
        "channel_id": channel,
        "channel_name": "directmessage" if channel.startswith("D") else "general",
        "user_id": user,
        "user_name": user_name or user.lower(),
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": f"{next(_triggers)}.{int(time.time())}.fake",
    }


def action_payload(
    action_id: str,
    value: str,
    *,
    user: str,
    channel: str,
    response_url: str,
    block_id: str | None = None,
    message: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``block_actions`` payload: someone clicked a button, in the actions block
    ``block_id``, on an ephemeral message (which Slack does not send along) or on
    ``message``, a message in the channel (sent along, its ``ts`` in the container)."""
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "unused-verification-token",
        "container": {
            "type": "message",
            "message_ts": "1.000001",
            "channel_id": channel,
            "is_ephemeral": message is None,
        },
        "trigger_id": f"{next(_triggers)}.{int(time.time())}.fake",
        "channel": {"id": channel, "name": "general"},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": block_id or "chorus_review_" + value,
                "text": {"type": "plain_text", "text": action_id},
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    if message is not None:
        payload["message"] = message
        payload["container"]["message_ts"] = message["ts"]
    return payload


async def _post(
    url: str,
    body: str,
    content_type: str,
    *,
    secret: str,
    retry_num: int | None,
    timestamp: str | None,
) -> tuple[int, str]:
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(body, timestamp, secret),
    }
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body.encode(), headers=headers) as response,
    ):
        return response.status, await response.text()


async def post_event(
    url: str,
    payload: dict[str, Any],
    *,
    secret: str = SIGNING_SECRET,
    retry_num: int | None = None,
    timestamp: str | None = None,
) -> tuple[int, str]:
    """POST ``payload`` to ``url`` signed with ``secret``; returns (status, body)."""
    return await _post(
        url,
        json.dumps(payload),
        "application/json",
        secret=secret,
        retry_num=retry_num,
        timestamp=timestamp,
    )


async def post_command(
    url: str, form: dict[str, str], *, secret: str = SIGNING_SECRET
) -> tuple[int, str]:
    """POST a form body (a slash command's fields) to ``url`` signed with ``secret``."""
    body = urlencode(form)
    return await _post(
        url,
        body,
        "application/x-www-form-urlencoded",
        secret=secret,
        retry_num=None,
        timestamp=None,
    )


async def post_action(
    url: str, payload: dict[str, Any], *, secret: str = SIGNING_SECRET
) -> tuple[int, str]:
    """POST an interactivity payload (``payload=<json>`` form) to ``url``, signed."""
    return await post_command(url, {"payload": json.dumps(payload)}, secret=secret)

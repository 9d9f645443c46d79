"""People's names, from ``users.info``: looked up once, kept a while, never in the way.

A message event carries only a user id (``user_profile`` only sometimes), so
``/whoami``, the profile and a thread's quoted context would show raw ids. The
names are cached (bounded, an hour each); a failed lookup is remembered for a
minute so a Slack outage does not cost one call per message, and a lookup never
holds a message up for more than ``LOOKUP_TIMEOUT`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._support import RecentValues, Sometimes
from gateway.adapters.slack._client import error_code
from gateway.clock import Clock

logger = logging.getLogger(__name__)

NAMES_KEPT = 5_000
NAME_TTL = 3600.0
MISS_TTL = 60.0
LOOKUP_TIMEOUT = 3.0
NO_SUCH_PERSON = frozenset({"user_not_found", "user_not_visible"})
"""``users.info`` errors that say nothing is wrong but the id (not worth a warning)."""


def name_of(user: Mapping[str, Any]) -> str:
    """The name Slack shows for ``user`` (a ``users.info`` user or an event's profile)."""
    profile = user.get("profile") if isinstance(user.get("profile"), dict) else user
    assert isinstance(profile, Mapping)
    for key in ("display_name", "real_name"):
        value = profile.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    for key in ("real_name", "name"):
        value = user.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


class UserNames:
    def __init__(self, client: AsyncWebClient, *, clock: Clock | None = None) -> None:
        self._client = client
        self._names: RecentValues[str] = RecentValues(NAMES_KEPT, ttl=NAME_TTL, clock=clock)
        self._misses: RecentValues[bool] = RecentValues(NAMES_KEPT, ttl=MISS_TTL, clock=clock)
        self._failures = Sometimes(60.0, clock=clock)

    def remember(self, user_id: str, name: str) -> None:
        if user_id and name:
            self._names.put(user_id, name)

    async def name(self, user_id: str) -> str:
        """``user_id``'s name, or "" when Slack does not say."""
        if not user_id:
            return ""
        known = self._names.get(user_id)
        if known is not None:
            return known
        if self._misses.get(user_id):
            return ""
        try:
            answer = await asyncio.wait_for(self._client.users_info(user=user_id), LOOKUP_TIMEOUT)
            user = answer.get("user")
            name = name_of(user) if isinstance(user, dict) else ""
        except SlackApiError as exc:
            self._failed(user_id, error_code(exc))
            return ""
        except (ClientError, TimeoutError, OSError) as exc:
            self._failed(user_id, type(exc).__name__)
            return ""
        if not name:
            self._misses.put(user_id, True)
            return ""
        self._names.put(user_id, name)
        return name

    async def names(self, user_ids: Iterable[str]) -> dict[str, str]:
        """Names of several people at once (each looked up once)."""
        unique = list(dict.fromkeys(u for u in user_ids if u))
        found = await asyncio.gather(*(self.name(u) for u in unique))
        return {u: n for u, n in zip(unique, found, strict=True) if n}

    def _failed(self, user_id: str, why: str) -> None:
        self._misses.put(user_id, True)
        if why in NO_SUCH_PERSON:
            logger.debug("slack: users.info knows no %s (%s); showing the id", user_id, why)
        elif self._failures.due():
            logger.warning("slack: users.info failed (%s); showing ids for now", why)

"""Files shared in Slack messages: images fetched for the model (``llm.vision``), voice
clips, audio files and documents downloaded when they are read (``gateway.media``).

Slack serves a message's files from ``url_private_download`` to requests with
the bot token (scope ``files:read``). The token is sent only to Slack's own
file host (or the host of a configured ``slack.api_url``), never to another
URL an event might name; files above ``MAX_IMAGE_BYTES`` are skipped by their
declared size and cut off while reading, and an answer that is not an image
(Slack's sign-in page, when the token lacks the scope) is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import ClientError

from gateway.adapters._support import MAX_IMAGE_BYTES

logger = logging.getLogger(__name__)

SLACK_FILE_HOSTS = frozenset({"files.slack.com"})
IMAGES_PER_MESSAGE = 4
DOWNLOAD_TIMEOUT = 20.0


def images_to_fetch(files: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """(index into ``files``, download URL) of the images worth fetching."""
    chosen: list[tuple[int, str]] = []
    for index, file in enumerate(files):
        mime = str(file.get("mimetype") or "")
        size = file.get("size")
        url = file.get("url_private_download") or file.get("url_private")
        if not mime.startswith("image/") or not isinstance(url, str):
            continue
        if isinstance(size, int) and size > MAX_IMAGE_BYTES:
            continue
        chosen.append((index, url))
    return chosen[:IMAGES_PER_MESSAGE]


class FileFetcher:
    def __init__(self, token: str, *, extra_host: str | None = None) -> None:
        self._token = token
        self._hosts = SLACK_FILE_HOSTS | ({extra_host} if extra_host else set())

    def may_fetch(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("https", "http") and (parts.hostname or "") in self._hosts

    async def fetch(
        self, url: str, *, limit: int = MAX_IMAGE_BYTES, image: bool = True
    ) -> bytes | None:
        """The file at ``url`` (an image, unless ``image`` is False), or None (not Slack's,
        larger than ``limit``, not an image, Slack's sign-in page, unreachable)."""
        if not self.may_fetch(url):
            logger.warning("slack: a file URL outside Slack was not fetched")
            return None
        headers = {"Authorization": f"Bearer {self._token}"}
        timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(url, headers=headers, allow_redirects=False) as response,
            ):
                wrong = (
                    not response.content_type.startswith("image/")
                    if image
                    else response.content_type == "text/html"
                )
                if response.status != 200 or wrong:
                    logger.warning(
                        "slack: a shared file could not be fetched (HTTP %s, %s); "
                        "does the app have the files:read scope?",
                        response.status,
                        response.content_type,
                    )
                    return None
                data = bytearray()
                async for chunk in response.content.iter_chunked(64 * 1024):
                    data.extend(chunk)
                    if len(data) > limit:
                        break
        except (ClientError, TimeoutError, OSError) as exc:
            logger.warning("slack: fetching a shared file failed (%s)", type(exc).__name__)
            return None
        if len(data) > limit:
            logger.info("slack: a shared file over %d bytes was skipped", limit)
            return None
        return bytes(data)

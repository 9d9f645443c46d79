"""A spoken reply on Slack: an audio file (``files_upload_v2``) in the answer's thread.

Slack has no voice messages a bot can post; an uploaded OGG/Opus file plays in
place (scope ``files:write``, as ``/export`` needs).
"""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters.slack._errors import platform_errors

__all__ = ["VOICE_FILENAME", "upload_voice"]

VOICE_FILENAME = "answer.ogg"
VOICE_TITLE = "Spoken reply"


async def upload_voice(
    client: AsyncWebClient, channel: str, audio: bytes, thread_ts: str | None
) -> None:
    """``files.getUploadURLExternal``, the upload, ``files.completeUploadExternal`` sharing
    it into ``channel`` (under ``thread_ts`` when given)."""
    with platform_errors():
        await client.files_upload_v2(
            channel=channel,
            file=audio,
            filename=VOICE_FILENAME,
            title=VOICE_TITLE,
            thread_ts=thread_ts,
        )

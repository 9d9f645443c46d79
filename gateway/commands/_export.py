"""``/export``: a person takes out everything chorus holds of them, as a file.

Only in a direct chat (typed in a group, they are told so privately). The
archive (:func:`gateway.commands.erasure.export`, audited as ``users export``) is
built off the event loop and sent into the direct chat as a file: a Telegram
document, a Slack file upload, a Discord attachment. Over the platform's size
limit, the person is told to ask an admin for ``chorus users export``. One export
per person per :data:`~gateway.commands._export_quota.EXPORT_WINDOW`, counted in
the shared database; a delivery that failed is not counted.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.adapters import AdapterError, BaseAdapter, FileRefused
from gateway.clock import Clock
from gateway.commands._export_quota import EXPORT_WINDOW, ExportQuota
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from gateway.commands.erasure import export
from gateway.config import database_location
from memory.database import Location
from memory.paths import UserKey

__all__ = ["ExportDesk"]

logger = logging.getLogger(__name__)

ONLY_DIRECT = "/export works in a direct chat with me only: send it to me there."
CAPTION = "Everything I hold about you (manifest.json lists what is inside)."
SENT = "Your data is in the file above."
TOO_SOON = "You took out your data recently: you can do it again in {minutes} minutes."
TOO_LARGE = (
    "Your data ({size:,} bytes) is larger than {platform} lets me send ({limit:,} bytes). "
    "Ask an admin to run `chorus users export {person}` for you."
)
NO_FILES = "I cannot send files here. Ask an admin to run `chorus users export {person}` for you."
FAILED = "Sending your data failed ({why}); nothing was counted, try again later."


@dataclass
class ExportDesk:
    adapters: Mapping[str, BaseAdapter]
    """The running adapters by platform (``Replies.adapters``)."""
    clock: Clock
    window: float = EXPORT_WINDOW

    def register(self, registry: CommandRegistry) -> None:
        registry.register(
            Command(
                "export",
                "get everything I hold about you as a file (in a direct message)",
                self.export_command,
                admin_only=False,
                private=True,
                in_groups=False,
            )
        )

    async def export_command(self, ctx: CommandContext) -> str:
        if not ctx.msg.is_direct:
            return ONLY_DIRECT
        account = ctx.user_key.key
        people = ctx.services.people
        person = await people.person_of(account) if people is not None else account
        where = database_location(ctx.services.settings)
        at = self.clock.time()
        due = await asyncio.to_thread(_take, where, person, at, self.window)
        if due is not None:
            logger.info("an export was refused: too soon after the last one")
            return TOO_SOON.format(minutes=max(1, math.ceil((due - at) / 60)))
        try:
            return await self._deliver(ctx, account)
        except _Undelivered as exc:
            await asyncio.to_thread(_give_back, where, person, at)
            return str(exc)
        except BaseException:
            await asyncio.to_thread(_give_back, where, person, at)
            raise

    async def _deliver(self, ctx: CommandContext, account: str) -> str:
        adapter = self.adapters.get(ctx.msg.platform)
        if adapter is None or adapter.capabilities.max_file_size <= 0:
            raise _Undelivered(NO_FILES.format(person=account))
        settings = ctx.services.settings
        archive = await asyncio.to_thread(export, settings, account, f"user:{account}")
        user = UserKey.parse(account)
        name = f"chorus-export-{user.platform}-{user.id}.zip"
        try:
            await adapter.send_file(ctx.msg.chat_id, name, archive, CAPTION)
        except FileRefused as exc:
            logger.info("an export was not sent: %s", exc)
            if exc.limit:
                text = TOO_LARGE.format(
                    size=len(archive), platform=adapter.name, limit=exc.limit, person=account
                )
            else:
                text = NO_FILES.format(person=account)
            raise _Undelivered(text) from None
        except AdapterError as exc:
            logger.warning("an export could not be sent (%s)", type(exc).__name__)
            raise _Undelivered(FAILED.format(why=type(exc).__name__)) from None
        logger.info("a person took out their data (%d bytes)", len(archive))
        return SENT


class _Undelivered(Exception):
    """The archive did not reach the person; the text says why."""


def _take(where: Location, person: str, at: float, window: float) -> float | None:
    with ExportQuota(where) as quota:
        return quota.take(person, at, window)


def _give_back(where: Location, person: str, at: float) -> None:
    with ExportQuota(where) as quota:
        quota.give_back(person, at)

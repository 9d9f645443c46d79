"""``/link``, ``/unlink``, ``/whoami``: several platform accounts as one person.

``/link`` in a direct message gives a one-time code (``CODE_TTL_MINUTES``,
``CODES_PER_HOUR`` a person may ask for, kept only as an HMAC under the
install's secret, as pairing codes are); ``/link CODE`` in a direct message
from an account on another platform, already allowed to use the bot, makes the
two one person (``memory.people``). Linking never grants rights: whether an
account may use the bot, and whether it is an admin, is asked of that account.

Every link and unlink is audited (never the code). The open sessions of the
accounts concerned are ended, so the next message starts with the person's
profile; sessions stay per chat.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.jobs import ProviderSource
from gateway.access import CODE_ALPHABET, AdminReply, normalize_user_key
from gateway.clock import Clock
from gateway.commands import _link_texts as t
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from gateway.commands._services import SessionControl
from memory.paths import UserKey
from memory.people import PERSON_PLATFORM, LinkCode, LinkOutcome, PeopleStore, link_accounts
from memory.store import MemoryStore

__all__ = [
    "CODES_PER_HOUR",
    "CODE_TTL_MINUTES",
    "LinkDesk",
    "link_sub",
    "provider_merger",
    "unlink_sub",
]

logger = logging.getLogger(__name__)

CODE_LENGTH = 8
CODE_TTL_MINUTES = 10
"""How long a link code works."""
CODES_PER_HOUR = 5
"""Link codes one account may ask for within an hour."""
TRIES_PER_HOUR = 10
"""Link codes one account may try within an hour (right or wrong)."""
WINDOW = 3600.0


@dataclass
class LinkDesk:
    people: PeopleStore
    salt: Callable[[], bytes]
    """The install's secret that keys code hashes (``GatewayDB.install_salt``)."""
    clock: Clock
    stores: Callable[[UserKey], MemoryStore]
    """The MemoryStore of a key (its USER.md)."""
    merge_memories: Callable[[list[str], str], bool] | None = None
    """Joins the external memory provider's memories of the joined keys into the
    person's (``provider_merger``); None without an external provider."""
    sessions: SessionControl | None = None
    """Open sessions, ended when their account is linked or unlinked (None: the command
    line, which leaves a running gateway's sessions to end as they do)."""

    def register(self, registry: CommandRegistry) -> None:
        registry.register(
            Command(
                "link",
                "link this account with yours on another platform (in a direct message)",
                self.link_command,
                admin_only=False,
                audit_args=_no_code,
                args="[CODE]",
                private=True,
                in_groups=False,
            )
        )
        registry.register(
            Command(
                "unlink",
                "make an account of yours its own person again",
                self.unlink_command,
                admin_only=False,
                args="[platform:id]",
                private=True,
                in_groups=False,
            )
        )

    # ------------------------------------------------------------------ people

    async def link_command(self, ctx: CommandContext) -> str:
        if not ctx.msg.is_direct:
            return t.DM_ONLY
        account = str(ctx.user_key)
        now = self.clock.time()
        if not ctx.args:
            return await self._issue(account, now)
        code = re.sub(r"[\s-]", "", ctx.args).upper()
        if not await asyncio.to_thread(
            self.people.take_code_quota, f"try|{account}", now, WINDOW, TRIES_PER_HOUR
        ):
            return t.TRY_LIMIT
        if len(code) != CODE_LENGTH or set(code) - set(CODE_ALPHABET):
            await ctx.services.audit(account, "/link", "<code>", "invalid")
            return t.NOT_A_CODE.format(length=CODE_LENGTH)
        status, other = await asyncio.to_thread(
            self.people.redeem_code, self._hash(code), account, now
        )
        if status != "ok" or other is None:
            await ctx.services.audit(account, "/link", "<code>", status)
            texts = {
                "unknown": t.CODE_UNKNOWN,
                "expired": t.CODE_EXPIRED,
                "used": t.CODE_USED,
                "same": t.CODE_SAME.format(code=code),
            }
            logger.info("link code refused for %s: %s", account, status)
            return texts.get(status, t.CODE_UNKNOWN)
        outcome = await self._link(UserKey.parse(other), ctx.user_key, account)
        await ctx.services.audit(account, "/link", f"<code> → {other}", "ok")
        accounts = await self._accounts(outcome.person, account)
        if not outcome.linked.joined:
            return t.ALREADY.format(accounts=accounts)
        lines = [t.LINKED.format(accounts=accounts)]
        merge = outcome.merge
        if merge.added or merge.duplicates:
            lines.append(t.MERGED.format(added=merge.added, duplicates=merge.duplicates))
        if merge.left_out:
            entries = "\n".join(f"• {entry}" for entry in merge.left_out)
            lines.append(t.LEFT_OUT.format(n=len(merge.left_out), entries=entries))
        return "\n\n".join(lines)

    async def _issue(self, account: str, now: float) -> str:
        if not await asyncio.to_thread(
            self.people.take_code_quota, account, now, WINDOW, CODES_PER_HOUR
        ):
            logger.info("link code refused to %s: hourly limit reached", account)
            return t.CODE_LIMIT.format(limit=CODES_PER_HOUR)
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        record = LinkCode(self._hash(code), account, now, now + CODE_TTL_MINUTES * 60.0)
        await asyncio.to_thread(self.people.add_code, record)
        logger.info("link code issued to %s", account)
        return t.CODE.format(code=code, minutes=CODE_TTL_MINUTES)

    async def unlink_command(self, ctx: CommandContext) -> str:
        account = str(ctx.user_key)
        target = account
        if ctx.args:
            named = normalize_user_key(ctx.args.strip())
            if named is None:
                return t.UNLINK_USAGE
            person = await asyncio.to_thread(self.people.person_of, account)
            if named not in await asyncio.to_thread(self.people.accounts_of, person):
                return t.NOT_YOURS.format(account=named)
            target = named
        left = await self._unlink(target)
        await ctx.services.audit(account, "/unlink", target, "ok" if left else "not_linked")
        if left is None:
            return t.NOT_LINKED
        return t.UNLINKED.format(account=target)

    async def person_of(self, account: str) -> str:
        """The person key ``account`` counts under: budgets and usage follow the person."""
        return await asyncio.to_thread(self.people.person_of, account)

    async def whoami_lines(self, account: str) -> list[str]:
        """What ``/whoami`` adds: the person and its accounts, or how to link one."""
        person = await asyncio.to_thread(self.people.person_of, account)
        if person == account:
            return [t.WHOAMI_ALONE]
        accounts = await self._accounts(person, account)
        return [t.WHOAMI.format(person=person, accounts=accounts)]

    # ------------------------------------------------------------------ admins

    async def admin_link(self, first: str, second: str, by: str) -> AdminReply:
        keys = [normalize_user_key(first), normalize_user_key(second)]
        for raw, key in zip((first, second), keys, strict=True):
            if key is None or key.startswith(f"{PERSON_PLATFORM}:"):
                return AdminReply(t.ADMIN_NOT_ACCOUNT.format(key=raw), ok=False, outcome="invalid")
        a, b = (UserKey.parse(str(k)) for k in keys)
        outcome = await self._link(a, b, by)
        subject = f"{a} {b}"
        if not outcome.linked.joined:
            text = t.ADMIN_ALREADY.format(first=a, second=b, person=outcome.person)
            return AdminReply(text, ok=True, subject=subject, outcome="already")
        left = len(outcome.merge.left_out)
        merge = t.ADMIN_LEFT_OUT.format(n=left) if left else ""
        text = t.ADMIN_LINKED.format(first=a, second=b, person=outcome.person, merge=merge)
        return AdminReply(text, ok=True, subject=subject)

    async def admin_unlink(self, account: str, by: str) -> AdminReply:
        key = normalize_user_key(account)
        if key is None or key.startswith(f"{PERSON_PLATFORM}:"):
            return AdminReply(t.ADMIN_NOT_ACCOUNT.format(key=account), ok=False, outcome="invalid")
        left = await self._unlink(key)
        if left is None:
            return AdminReply(
                t.ADMIN_NOT_LINKED.format(account=key), ok=False, subject=key, outcome="not_found"
            )
        logger.info("%s unlinked %s from %s", by, key, left)
        return AdminReply(t.ADMIN_UNLINKED.format(account=key, person=left), ok=True, subject=key)

    # ------------------------------------------------------------------- work

    async def _link(self, first: UserKey, second: UserKey, by: str) -> LinkOutcome:
        outcome = await asyncio.to_thread(
            link_accounts,
            self.people,
            first,
            second,
            by=by,
            at=self.clock.time(),
            stores=self.stores,
        )
        logger.info("%s linked %s and %s into %s", by, first, second, outcome.person)
        if outcome.linked.joined and self.merge_memories is not None:
            await self._merge_memories(list(outcome.linked.joined), outcome.person)
        await self._end_sessions({str(first), str(second), *outcome.linked.joined})
        return outcome

    async def _merge_memories(self, sources: list[str], person: str) -> None:
        assert self.merge_memories is not None
        try:
            merged = await asyncio.to_thread(self.merge_memories, sources, person)
        except Exception as exc:  # the link stands; the provider's memories stay apart
            logger.warning(
                "memory provider could not join the memories of %s (%s)", person, type(exc).__name__
            )
            return
        if not merged:
            logger.info("memory provider keeps the memories made before the link apart")

    async def _unlink(self, account: str) -> str | None:
        left = await asyncio.to_thread(self.people.unlink, account)
        if left is not None:
            await self._end_sessions({account})
        return left

    async def _end_sessions(self, keys: set[str]) -> None:
        """End the open sessions of these accounts (or persons): the next message of each
        opens a session with the profile that is theirs now."""
        if self.sessions is None:
            return
        for live in list(self.sessions.sessions):
            if live.user_key.chat:
                continue
            account = f"{live.key.platform}:{live.key.user_id}"
            if account in keys or str(live.user_key) in keys:
                await self.sessions.end(live, "linked", notify_next=False)

    async def _accounts(self, person: str, here: str) -> str:
        accounts = await asyncio.to_thread(self.people.accounts_of, person)
        return "\n".join(
            t.ACCOUNTS_LINE.format(account=a, here=t.HERE if a == here else "") for a in accounts
        )

    def _hash(self, code: str) -> str:
        return hmac.new(self.salt(), code.encode("ascii"), hashlib.sha256).hexdigest()


def _no_code(args: str) -> str:
    """A link code never reaches the audit table."""
    return "<code>" if args.strip() else ""


async def link_sub(ctx: CommandContext, arg: str) -> str:
    """``/admin link A B``."""
    desk = ctx.services.people
    if desk is None:
        return AdminReply(t.UNAVAILABLE, ok=False, outcome="unavailable")
    parts = arg.split()
    if len(parts) != 2:
        return AdminReply(t.ADMIN_LINK_USAGE, ok=False, outcome="usage")
    return await desk.admin_link(parts[0], parts[1], str(ctx.user_key))


async def unlink_sub(ctx: CommandContext, arg: str) -> str:
    """``/admin unlink A``."""
    desk = ctx.services.people
    if desk is None:
        return AdminReply(t.UNAVAILABLE, ok=False, outcome="unavailable")
    parts = arg.split()
    if len(parts) != 1:
        return AdminReply(t.ADMIN_UNLINK_USAGE, ok=False, outcome="usage")
    return await desk.admin_unlink(parts[0], str(ctx.user_key))


def provider_merger(
    source: ProviderSource | None, home: Path
) -> Callable[[list[str], str], bool] | None:
    """``LinkDesk.merge_memories`` for the configured external provider (None: none)."""
    if source is None:
        return None

    def merge(sources: list[str], target: str) -> bool:
        return source.load().merge_users(home, sources, target)

    return merge

"""Who may talk to the bot: admins, allowed users, pairing, run-time allow and deny.

Identity is the platform's user id (``InboundMessage.user_key``), never anything
a message says. The order of ``Authorizer.decide``:

1. admins from the config, and the local console user, are always allowed;
2. a user an admin denied at run time is refused (this wins over
   ``auth.allowed_users``, never over ``auth.admins``);
3. ``policy: open`` allows everyone else;
4. ``auth.allowed_users`` and users allowed at run time are allowed;
5. ``policy: pairing``: an unknown user in a direct message gets a pairing code
   to hand to an admin, who approves it with ``approve_code``;
6. everything else is refused: silently in groups, and in direct messages with
   one short notice per user per hour.

Notices to strangers (refusals, pairing codes) are also capped for all of them
together (``auth.stranger_notices_per_minute``). Over the cap a stranger is told
nothing, and no pairing code is made: the next message after the minute gets one.

Pairing codes are 8 characters from an alphabet without look-alikes. Only an
HMAC-SHA-256 of each code, keyed by a per-install secret, is stored. The number
of codes is limited per user, so strangers cannot use up pairing for others.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Self

from gateway.access import _texts as t
from gateway.access._ratelimit import NoticeThrottle, StrangerCap
from gateway.access._tables import GatewayDB, PairingCode
from gateway.clock import Clock
from gateway.config import AuthSettings
from gateway.events import InboundMessage
from memory.errors import MemoryPathError
from memory.paths import UserKey

__all__ = [
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "CONSOLE_PLATFORM",
    "AdminReply",
    "AuthDecision",
    "Authorizer",
    "UserAccessRow",
    "normalize_user_key",
]

logger = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""Pairing-code characters: no 0/O or 1/I, which people mistake for each other."""

CODE_LENGTH = 8
PAIRING_WINDOW = 3600.0
"""Seconds over which ``auth.pairing_codes_per_hour`` is counted."""

NOTICE_INTERVAL = 3600.0
"""Seconds between two refusal notices of one kind to one user."""

CONSOLE_PLATFORM = "console"
"""The local terminal: its user owns the machine and counts as an admin."""


@dataclass(frozen=True, slots=True)
class AuthDecision:
    allowed: bool
    reply: str | None
    reason: str
    code: str | None = None
    """The pairing code just issued to the sender (the admins are shown it)."""


@dataclass(frozen=True, slots=True)
class UserAccessRow:
    """One user in ``Authorizer.users()``: the state in effect and where it comes from."""

    user_key: str
    state: Literal["admin", "allowed", "denied"]
    source: Literal["config", "runtime"]
    by: str | None = None
    at: float | None = None


class AdminReply(str):
    """A sentence for the admin. ``ok`` says whether it was done; ``subject`` is the user.

    Audit the action with ``subject`` as its argument, never the pairing code, and
    with ``outcome``: ``ok``, ``refused``, or what else happened (``not_found``,
    ``expired``, ``used``, ``invalid``, ``unknown``, ``usage``, ``failed``).
    ``chat_id`` is where an approved user asked for the code, to greet them there.
    """

    ok: bool
    subject: str | None
    chat_id: str | None
    _outcome: str | None

    def __new__(
        cls,
        text: str,
        *,
        ok: bool,
        subject: str | None = None,
        chat_id: str | None = None,
        outcome: str | None = None,
    ) -> Self:
        reply = super().__new__(cls, text)
        reply.ok = ok
        reply.subject = subject
        reply.chat_id = chat_id
        reply._outcome = outcome
        return reply

    @property
    def outcome(self) -> str:
        if self._outcome is not None:
            return self._outcome
        return "ok" if self.ok else "refused"


def normalize_user_key(text: str) -> str | None:
    """``platform:id`` with the platform lower-cased, or None if ``text`` is not a person's key.

    A chat's shared profile key (``telegram#chat:…``) is no person and never matches.
    """
    try:
        key = UserKey.parse(text)
    except MemoryPathError:
        return None
    return None if key.chat else str(key)


def _config_keys(entries: list[str], where: str) -> frozenset[str]:
    keys = set()
    for entry in entries:
        key = normalize_user_key(entry)
        if key is None:
            logger.warning("ignoring %s entry %r: expected platform:id", where, entry)
        else:
            keys.add(key)
    return frozenset(keys)


@dataclass(frozen=True, slots=True)
class _Config:
    settings: AuthSettings
    admins: frozenset[str]
    allowed: frozenset[str]


class Authorizer:
    """Decides for each inbound message whether the bot may answer it.

    Synchronous and thread-safe; it reads and writes ``GatewayDB``, so async
    callers run it with ``asyncio.to_thread``.
    """

    def __init__(self, settings: AuthSettings, db: GatewayDB, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._notices = NoticeThrottle(NOTICE_INTERVAL, clock)
        self._strangers = StrangerCap(clock)
        self._salt: bytes | None = None
        self._salt_lock = threading.Lock()
        self._config = self._load(settings)

    @staticmethod
    def _load(settings: AuthSettings) -> _Config:
        admins = _config_keys(settings.admins, "auth.admins")
        allowed = _config_keys(settings.allowed_users, "auth.allowed_users")
        return _Config(settings, admins, allowed)

    def reload(self, settings: AuthSettings) -> None:
        """Use new config lists and policy from now on; run-time decisions are kept."""
        self._config = self._load(settings)
        logger.info(
            "auth reloaded: policy %s, %d admins, %d allowed users",
            settings.policy,
            len(self._config.admins),
            len(self._config.allowed),
        )

    def is_admin(self, user_key: UserKey | str) -> bool:
        key = normalize_user_key(str(user_key))
        return key is not None and _is_admin(key, self._config)

    @property
    def reads_locally(self) -> bool:
        """Whether its reads are of a local SQLite file (microseconds, no network): then
        ``read_decision`` is cheaper on the event loop than a hop to a worker thread."""
        return not self._db.is_postgres

    def decide(self, msg: InboundMessage, *, capped: bool = True) -> AuthDecision:
        """Whether ``msg`` may be answered, and what a refused sender is told.

        ``capped``: that reply counts against ``auth.stranger_notices_per_minute``
        (False where the platform shows it without a message of ours being sent).
        """
        decision = self.read_decision(msg)
        if decision is not None:
            return decision
        key = normalize_user_key(str(msg.user_key))
        assert key is not None  # read_decision decides a message without a user
        return self._pair(msg, key, self._config.settings, capped)

    def read_decision(self, msg: InboundMessage) -> AuthDecision | None:
        """``decide`` for every message but a stranger's that may be given a pairing code
        (None: ``decide`` it); reads only, it writes nothing."""
        key = normalize_user_key(str(msg.user_key))
        if key is None:
            return AuthDecision(False, None, "no_user")
        config = self._config
        if _is_admin(key, config):
            return AuthDecision(True, None, "admin")
        record = self._db.get_access(key)
        if record is not None and record.state == "denied":
            return self._refuse(msg, key, "denied", t.DENIED_NOTICE)
        if config.settings.policy == "open":
            return AuthDecision(True, None, "open")
        if key in config.allowed or record is not None:
            return AuthDecision(True, None, "allowed")
        if config.settings.policy == "pairing" and msg.is_direct:
            return None
        return self._refuse(msg, key, "not_allowed", t.PRIVATE.format(user_key=key))

    def _refuse(self, msg: InboundMessage, key: str, reason: str, text: str) -> AuthDecision:
        return AuthDecision(False, self._notice(msg, key, reason, text), reason)

    def _notice(
        self, msg: InboundMessage, key: str, kind: str, text: str, *, capped: bool = True
    ) -> str | None:
        """``text`` in a direct message, once per hour per user and kind, within the cap
        on notices to strangers; else nothing (and the hour has not begun)."""
        throttle = f"{kind}|{key}"
        if not msg.is_direct or not self._notices.allow(throttle):
            return None
        if capped and not self._strangers.take(self._config.settings.stranger_notices_per_minute):
            self._notices.forget(throttle)
            return None
        return text

    def _pair(
        self, msg: InboundMessage, key: str, settings: AuthSettings, capped: bool
    ) -> AuthDecision:
        now = self._clock.time()
        if not _asks_for_code(msg.text) and self._db.pending_code(key, now) is not None:
            reason = "pairing_pending"
            text = self._notice(msg, key, reason, t.CODE_PENDING, capped=capped)
            return AuthDecision(False, text, reason)
        if capped and not self._strangers.take(settings.stranger_notices_per_minute):
            logger.debug("pairing code for %s held back: notices to strangers at the cap", key)
            return AuthDecision(False, None, "pairing_held_back")
        if not self._db.take_pairing_quota(
            key, now, PAIRING_WINDOW, settings.pairing_codes_per_hour
        ):
            logger.debug("pairing code refused to %s: hourly limit reached", key)
            if capped:
                self._strangers.give_back()  # the notice below is counted by itself
            reason = "pairing_limited"
            text = self._notice(msg, key, reason, t.CODE_LIMIT, capped=capped)
            return AuthDecision(False, text, reason)
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        ttl = settings.pairing_code_ttl_minutes
        self._db.add_pairing_code(
            PairingCode(
                code_hash=self._hash(code),
                user_key=key,
                platform=msg.platform.lower(),
                chat_id=msg.chat_id,
                created_at=now,
                expires_at=now + ttl * 60.0,
            )
        )
        logger.info("pairing code issued to %s", key)
        text = t.CODE.format(code=code, minutes=ttl)
        return AuthDecision(False, text, "pairing_code_issued", code)

    def _hash(self, code: str) -> str:
        with self._salt_lock:
            if self._salt is None:
                self._salt = self._db.install_salt()
            salt = self._salt
        return hmac.new(salt, code.encode("ascii"), hashlib.sha256).hexdigest()

    def approve_code(self, code: str, by: str) -> AdminReply:
        """Allow the user who was given ``code``; the reply says who, or why not."""
        normalized = re.sub(r"[\s-]", "", code).upper()
        if len(normalized) != CODE_LENGTH or set(normalized) - set(CODE_ALPHABET):
            return AdminReply(t.NOT_A_CODE.format(length=CODE_LENGTH), ok=False, outcome="invalid")
        return self._redeem(self._hash(normalized), by)

    def approve_pending(self, user_key: str, by: str) -> AdminReply:
        """Allow ``user_key`` by their newest pairing code still valid: what ``approve_code``
        does with that code (a request's **Approve** button)."""
        key = normalize_user_key(user_key)
        if key is None:
            return AdminReply(t.USER_KEY_HELP, ok=False, outcome="invalid")
        pending = self._db.pending_code(key, self._clock.time())
        if pending is None:
            return AdminReply(
                t.NO_VALID_CODE.format(key=key), ok=False, subject=key, outcome="expired"
            )
        return self._redeem(pending.code_hash, by)

    def _redeem(self, code_hash: str, by: str) -> AdminReply:
        status, found = self._db.redeem_pairing_code(code_hash, by, self._clock.time())
        if status == "ok" and found is not None:
            logger.info("%s approved the pairing of %s", by, found.user_key)
            return AdminReply(
                t.APPROVED.format(user_key=found.user_key),
                ok=True,
                subject=found.user_key,
                chat_id=found.chat_id,
            )
        subject = found.user_key if found is not None else None
        texts = {"unknown": t.CODE_UNKNOWN, "expired": t.CODE_EXPIRED, "used": t.CODE_USED}
        outcome = "not_found" if status == "unknown" else status
        return AdminReply(texts[status], ok=False, subject=subject, outcome=outcome)

    def allow(self, user_key: str, by: str) -> AdminReply:
        key = normalize_user_key(user_key)
        if key is None:
            return AdminReply(t.USER_KEY_HELP, ok=False, outcome="invalid")
        if self.is_admin(key):
            return AdminReply(t.ALREADY_ADMIN.format(key=key), ok=True, subject=key)
        self._db.set_access(key, "allowed", by, self._clock.time())
        logger.info("%s allowed %s", by, key)
        return AdminReply(t.ALLOWED.format(key=key), ok=True, subject=key)

    def deny(self, user_key: str, by: str) -> AdminReply:
        key = normalize_user_key(user_key)
        if key is None:
            return AdminReply(t.USER_KEY_HELP, ok=False, outcome="invalid")
        if key.startswith(f"{CONSOLE_PLATFORM}:"):
            return AdminReply(t.CONSOLE_NOT_DENIED.format(key=key), ok=False, subject=key)
        if self.is_admin(key):
            return AdminReply(t.ADMIN_NOT_DENIED.format(key=key), ok=False, subject=key)
        self._db.set_access(key, "denied", by, self._clock.time())
        logger.info("%s denied %s", by, key)
        note = t.OVERRIDES_ALLOWED if key in self._config.allowed else ""
        return AdminReply(t.DENIED.format(key=key, note=note), ok=True, subject=key)

    def users(self) -> list[UserAccessRow]:
        """Every user the config or an admin named, with the state in effect."""
        config = self._config
        rows: dict[str, UserAccessRow] = {}
        for key in config.allowed:
            rows[key] = UserAccessRow(key, "allowed", "config")
        for record in self._db.access_records():
            rows[record.user_key] = UserAccessRow(
                record.user_key, record.state, "runtime", record.by, record.at
            )
        for key in config.admins:
            rows[key] = UserAccessRow(key, "admin", "config")
        return [rows[key] for key in sorted(rows)]


def _is_admin(key: str, config: _Config) -> bool:
    return key.startswith(f"{CONSOLE_PLATFORM}:") or key in config.admins


def _asks_for_code(text: str) -> bool:
    words = text.split(maxsplit=1)
    return bool(words) and words[0].split("@", 1)[0].lower() == t.NEW_CODE_COMMAND


def admin_checker(admins: list[str]) -> Callable[[str], bool]:
    """``is_admin(user_key)`` for code that has only the settings (agent factories, workers)."""
    keys = _config_keys(admins, "auth.admins")

    def is_admin(user_key: UserKey | str) -> bool:
        key = normalize_user_key(str(user_key))
        return key is not None and (key.startswith(f"{CONSOLE_PLATFORM}:") or key in keys)

    return is_admin

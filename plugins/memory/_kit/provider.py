"""The skeleton every remote memory provider shares: :class:`RemoteProvider`.

A provider built on it is its own logic plus this:

* who it is: ``provider_name``, ``dependency`` (its :class:`~.library.ClientLibrary`
  or a module with ``installed()`` and ``UNAVAILABLE_REASON``),
  ``config_schema`` (offered to ``chorus memory setup``; the settings live in
  config.yaml under ``memory.providers.<name>``, so :meth:`save_config`
  writes nothing) and ``tool_schemas``;
* the session it serves (:meth:`start_session`): ``CHORUS_HOME``, the
  canonical user key, the session id, the agent context, and a
  :class:`~.guard.Guard` around every backend call (``clock``,
  ``failure_threshold`` and ``cooldown`` set its breaker);
* :meth:`owner`: whose store a call acts on (the speaker, else the session's user);
  :meth:`recall_keys`: whose stores a recall reads (a linked person's accounts too);
* :meth:`turn`: what every ``sync_turn`` checks before syncing a turn (not in the
  end-of-session flush, recalled context stripped, nothing to store when both
  sides are empty, whose turn and which session);
* :meth:`handle_tool_call`: the argument and tool-name checks and the mapping of
  every error to the JSON tool error (:mod:`.tool_calls`) around the provider's
  :meth:`run_tool`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from memory.paths import UserKey
from memory.providers import MemoryProvider, strip_memory_context
from plugins.memory._breaker import DEFAULT_COOLDOWN, DEFAULT_THRESHOLD, CircuitBreaker

from .errors import NotReady
from .guard import Guard
from .identity import linked_keys, owner_key
from .tool_calls import BAD_ARGUMENTS, answer_tool_call, tool_error

__all__ = ["Dependency", "RemoteProvider", "Session", "Turn"]


class Dependency(Protocol):
    """What a provider needs installed: whether it is, and what to do if not."""

    UNAVAILABLE_REASON: str

    def installed(self) -> bool: ...


@dataclass(frozen=True)
class Session:
    """What ``initialize`` was told about the session a provider serves."""

    home: Path
    user_key: str
    session_id: str
    context: str
    platform: str
    account_keys: tuple[str, ...] = ()
    """The accounts linked into the person ``user_key`` is (``person:…``): recall reads
    their memories too; none for any other key."""

    @classmethod
    def of(cls, session_id: str, kwargs: Mapping[str, Any]) -> Session:
        """From ``initialize``'s arguments; ValueError for a user key that is not one."""
        user = UserKey.parse(str(kwargs["user_key"]))
        return cls(
            home=Path(kwargs["chorus_home"]),
            user_key=user.key,
            session_id=session_id,
            context=str(kwargs.get("agent_context") or "primary"),
            platform=str(kwargs.get("platform") or ""),
            account_keys=linked_keys(user, kwargs.get("account_keys")),
        )


@dataclass(frozen=True)
class Turn:
    """A turn worth syncing: both sides without recalled context, its owner and session."""

    user: str
    assistant: str
    owner: str
    session_id: str


class RemoteProvider(MemoryProvider):
    """A memory provider with a backend behind a guard; see the module."""

    provider_name: ClassVar[str]
    dependency: Dependency
    config_schema: ClassVar[Sequence[Mapping[str, Any]]] = ()
    tool_schemas: ClassVar[Sequence[Mapping[str, Any]]] = ()
    label: ClassVar[str] = ""
    """How messages name the provider (``"Honcho"``); its name by default."""
    backend_label: ClassVar[str] = "the memory backend"
    """How a failed tool names what failed: ``"<tool> could not run: <it> failed (...)"``."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        failure_threshold: int = DEFAULT_THRESHOLD,
        cooldown: float = DEFAULT_COOLDOWN,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        breaker = CircuitBreaker(threshold=failure_threshold, cooldown=cooldown, clock=clock)
        self.guard = self.make_guard(breaker)
        self._environ = environ
        self._home: Path | None = None
        self._user_key = ""
        self._session_id = ""
        self._context = "primary"
        self._account_keys: tuple[str, ...] = ()
        self._lock = threading.RLock()

    # -- who it is -----------------------------------------------------------

    @property
    def name(self) -> str:
        return self.provider_name

    @property
    def display_name(self) -> str:
        return self.label or self.provider_name

    def is_available(self) -> bool:
        return self.dependency.installed()

    @property
    def unavailable_reason(self) -> str | None:
        """Why the provider cannot run here (with the fix), or None when it can."""
        return None if self.is_available() else self.dependency.UNAVAILABLE_REASON

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [dict(field) for field in self.config_schema]

    def save_config(self, values: dict[str, Any], chorus_home: Path) -> None:
        """Nothing to write: the settings live in config.yaml (``memory.providers.<name>``)."""
        return None

    # -- the guard -----------------------------------------------------------

    def make_guard(self, breaker: CircuitBreaker) -> Guard:
        """The guard of every backend call; a provider names its own error classes here."""
        return Guard(self.provider_name, breaker, label=self.display_name)

    @property
    def breaker(self) -> CircuitBreaker:
        return self.guard.breaker

    # -- the session ---------------------------------------------------------

    def start_session(self, session: Session) -> None:
        """Serve ``session`` from now on (call it under the lock, once the client is built)."""
        self._home, self._user_key = session.home, session.user_key
        self._session_id, self._context = session.session_id, session.context
        self._account_keys = session.account_keys

    def is_ready(self) -> bool:
        """Whether ``initialize`` ran (and ``shutdown`` did not undo it)."""
        return self._home is not None

    def require_ready(self) -> None:
        if not self.is_ready():
            raise NotReady(f"the {self.provider_name} provider is not initialised")

    def owner(self, speaker: Any = None) -> str:
        """Whose store a call uses: ``speaker`` when given, else the session's user."""
        self.require_ready()
        return owner_key(self._user_key, speaker)

    def recall_keys(self, speaker: Any = None) -> list[str]:
        """Whose memories a recall reads: the owner's (:meth:`owner`), and when that is
        the session's linked person, the memories its accounts made before the link."""
        owner = self.owner(speaker)
        if owner != self._user_key:
            return [owner]
        return [owner, *self._account_keys]

    def follow_reset(self, new_session_id: str, reset: bool) -> bool:
        """After a reset, serve the new session; whether it was one."""
        if reset and new_session_id:
            with self._lock:
                self._session_id = new_session_id
        return reset

    # -- the turn ------------------------------------------------------------

    def skips_turns(self) -> bool:
        """Whether this agent syncs no turns: the end-of-session flush does not."""
        return self._context == "flush"

    def turn(
        self,
        user_content: str,
        assistant_content: str,
        session_id: str = "",
        speaker: str | None = None,
    ) -> Turn | None:
        """The turn ``sync_turn`` should store, or None when there is nothing to store."""
        if self.skips_turns():
            return None
        user = strip_memory_context(user_content or "").strip()
        assistant = strip_memory_context(assistant_content or "").strip()
        if not user and not assistant:
            return None
        owner = self.owner(speaker)
        return Turn(user, assistant, owner, session_id or self._session_id)

    # -- tools ---------------------------------------------------------------

    def offers_tools(self) -> bool:
        """Whether the model gets the tools in this session."""
        return True

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        if not self.offers_tools():
            return []
        return [json.loads(json.dumps(schema)) for schema in self.tool_schemas]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if not isinstance(args, dict):
            return tool_error(BAD_ARGUMENTS)
        if tool_name not in {schema["name"] for schema in self.get_tool_schemas()}:
            return tool_error(f"unknown tool '{tool_name}'")
        return answer_tool_call(
            tool_name,
            lambda: self.run_tool(tool_name, args, kwargs),
            provider=self.display_name,
            backend=self.backend_label,
        )

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """One of the provider's tools; ``call`` has ``speaker`` and ``session_id`` when known.

        Raise the family's errors; :meth:`handle_tool_call` answers them.
        """
        raise NotReady(f"{self.provider_name} has no tools")

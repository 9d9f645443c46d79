"""The memory provider contract: what an external memory backend implements.

A provider recalls context before a turn, stores the finished turn after it,
and may offer its own tools to the model. The :class:`MemoryManager
<memory.manager.MemoryManager>` runs the built-in provider plus at most one
external provider, isolates their failures from each other and from the turn,
and fences whatever they recall so the model never mistakes it for user input.

Four members must be implemented: :attr:`~MemoryProvider.name`,
:meth:`~MemoryProvider.is_available`, :meth:`~MemoryProvider.initialize` and
:meth:`~MemoryProvider.get_tool_schemas`. Everything else has a harmless
default (return ``""`` or do nothing), so a minimal provider overrides only
what it uses. A provider is discovered as a plugin package (see
``plugins.memory``) and configured by ``memory.provider`` in ``config.yaml``.

Threading: the manager calls :meth:`~MemoryProvider.sync_turn` and
:meth:`~MemoryProvider.queue_prefetch` on one background worker thread, in
submission order; every other method is called from the agent's worker
threads, never on the event loop. No method may assume it runs on the thread
that called :meth:`~MemoryProvider.initialize`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Literal

from memory.paths import ChorusPaths, UserKey

AgentContext = Literal["primary", "flush", "background"]
"""Why an agent was built: a live conversation, the end-of-session flush, or a job."""


def provider_dir(chorus_home: Path, name: str, user_key: str | None = None) -> Path:
    """Where provider ``name`` keeps its files: one directory per user with ``user_key``.

    State that must survive a crash or a restart of the process holding the
    provider (a worker killed mid-job, say) belongs here or in the provider's
    own backend, never only in memory: ``CHORUS_HOME/providers/<name>/users/
    <platform>/<id>/``, created 0700. A user's directory is theirs alone.
    """
    user = UserKey.parse(user_key) if user_key is not None else None
    return ChorusPaths(chorus_home).provider_dir(name, user)


class MemoryProvider(ABC):
    """Base class of every memory provider.

    Errors: a provider may raise from any method; the manager logs the
    exception class with the provider's name and carries on without it for
    that call. Exception text never reaches the user or the model.
    """

    # -- identity ------------------------------------------------------------

    @property
    @abstractmethod
    def name(self) -> str:
        """Short, stable id such as ``"builtin"`` or ``"honcho"``; the config value."""

    @abstractmethod
    def is_available(self) -> bool:
        """Whether the provider can run here: settings present, dependencies importable.

        Must be cheap and must not touch the network; it is called when the
        agent starts and when providers are listed.
        """

    # -- start-up ------------------------------------------------------------

    @abstractmethod
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Prepare for one session (open clients, load per-user state).

        ``kwargs`` always carry:

        * ``chorus_home`` (:class:`~pathlib.Path`): where to keep files;
        * ``platform`` (``str``): ``"telegram"``, ``"discord"``, ``"slack"``, ``"console"``;
        * ``user_key`` (``str``): ``"platform:id"``, the one user this session serves;
        * ``agent_context`` (``"primary" | "flush" | "background"``): a provider
          that models the user should stay passive outside ``"primary"`` so
          that system-driven prompts never shape the user's profile.

        Unknown keys may be added later; accept and ignore them. Raising here
        removes the provider for this session.
        """

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        """Static text for the system prompt, taken once per session; ``""`` for none.

        It becomes part of the cached prompt prefix, so it must not change
        from turn to turn; per-turn recall belongs in :meth:`prefetch`.
        """
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Context recalled for the user message ``query``; ``""`` for none.

        Called before each turn on the request path, so it must be fast:
        return what :meth:`queue_prefetch` cached rather than fetching now.
        The manager sanitises and fences the result before the model sees it.
        """
        return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Start recalling for ``query`` in the background; cache it for :meth:`prefetch`.

        Called on the manager's background worker after a turn, with the
        turn's user message as the likely topic of the next one.
        """
        return None

    # -- write ---------------------------------------------------------------

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store one finished turn.

        Runs on the manager's single background worker, so turns arrive in
        order and a slow backend never delays a reply. Recalled context has
        already been stripped from both texts. ``messages`` (the turn's
        OpenAI-format messages, tool calls included) is passed only when the
        override declares that parameter.
        """
        return None

    # -- tools ---------------------------------------------------------------

    @abstractmethod
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The provider's tools as OpenAI function schemas; ``[]`` for none.

        Each item is ``{"name": ..., "description": ..., "parameters": {...}}``
        (JSON Schema for the arguments). Names that collide with a core tool
        (``memory``, ``session_search``) or with an earlier provider's tool
        are ignored by the manager.
        """

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run one of this provider's tools and return its result as JSON text.

        Only called for names this provider listed in :meth:`get_tool_schemas`.
        Return errors the model can act on as JSON (``{"success": false,
        "error": ...}``); an exception becomes a generic error result.
        """
        raise NotImplementedError(f"memory provider {self.name!r} does not handle {tool_name!r}")

    # -- teardown ------------------------------------------------------------

    def shutdown(self) -> None:
        """Flush local queues and close connections; called once, at the end.

        The manager has already waited (boundedly) for queued syncs, and shuts
        providers down in reverse registration order.
        """
        return None

    # -- optional hooks ------------------------------------------------------

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """A turn begins; ``kwargs`` may carry ``model``, ``platform``, ``tool_count``."""
        return None

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """The session really ended (idle expiry, ``/new``, admin, shutdown).

        ``messages`` is the whole transcript. Not called between turns.
        """
        return None

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """The agent moved to another session id.

        ``reset=True``: a fresh conversation, drop per-session buffers.
        ``rewound=True``: same conversation with its transcript cut back, drop
        per-turn state only. ``parent_session_id`` names the session this one
        continues (after compression, for example).
        """
        return None

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """The history is about to be compressed; return text to keep in the summary."""
        return ""

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """The built-in ``memory`` tool changed a file; mirror it if useful.

        ``action`` is ``"add"``, ``"replace"`` or ``"remove"``; ``target`` is
        ``"memory"`` or ``"user"``.
        """
        return None

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        """A sub-agent finished ``task`` with ``result``; called on the parent only."""
        return None

    # -- configuration -------------------------------------------------------

    def get_config_schema(self) -> list[dict[str, Any]]:
        """Fields a setup wizard asks for; ``[]`` when there is nothing to set.

        Each field is a dict with ``key``, ``description`` and optionally
        ``secret``, ``required``, ``default``, ``choices``, ``url``, ``env_var``.
        Secrets must come from ``env_var``; they are never passed to
        :meth:`save_config`.
        """
        return []

    def save_config(self, values: dict[str, Any], chorus_home: Path) -> None:
        """Write the non-secret ``values`` to the provider's own config under ``chorus_home``.

        A provider configured purely through environment variables keeps this no-op.
        """
        return None

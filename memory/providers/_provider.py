"""The memory provider contract: what an external memory backend implements.

A provider recalls context before a turn, stores the finished turn after it,
and may offer its own tools to the model. The :class:`MemoryManager
<memory.providers.MemoryManager>` runs the built-in provider plus at most one
external provider, isolates their failures from each other and from the turn,
and fences whatever they recall so the model never mistakes it for user input.

Four members must be implemented: :attr:`~MemoryProvider.name`,
:meth:`~MemoryProvider.is_available`, :meth:`~MemoryProvider.initialize` and
:meth:`~MemoryProvider.get_tool_schemas`. Everything else has a harmless
default (return ``""`` or do nothing), so a minimal provider overrides only
what it uses. A provider is discovered as a plugin package (see
``plugins.memory``) and configured by ``memory.provider`` in ``config.yaml``.

Where each call happens (``agent_context``, given to :meth:`~MemoryProvider.initialize`):

* ``"primary"`` — the live conversation, in the gateway: ``system_prompt_block``,
  ``prefetch`` (this turn's message, bounded by ``memory.prefetch_timeout``),
  the provider's tools, ``on_turn_start``, ``on_memory_write``,
  ``on_pre_compress``, ``on_session_switch`` (without ``withdrawn_turn``).
* ``"background"`` — the jobs that follow a turn, in a worker process (``chorus
  worker``) or the gateway's own job thread: ``sync_turn`` with every turn the
  user really had, once and in order; ``queue_prefetch``; ``on_session_switch``
  with ``withdrawn_turn`` after ``/undo``/``/retry``; ``on_session_end``. These
  are the user's own words: a provider that models the user learns here.
* ``"flush"`` — the end-of-session memory flush, a prompt chorus writes itself:
  its tools and ``on_memory_write`` run, no turn is synced; also
  ``on_memory_write`` of a write an admin approved from the review queue (in a
  job, or in the ``chorus memory approve`` process). A provider that
  models the user stays passive here.

One instance serves one session in one context and one process; a worker keeps
it from one job to the next and calls :meth:`~MemoryProvider.shutdown` when the
session ends or the worker stops. A worker can still be killed without warning:
what must survive lives in the provider's backend or under
:func:`provider_dir`, never only in memory. Jobs are delivered at least once
(a killed worker's job runs again); chorus does not repeat a turn it has
recorded as synced, but a provider's own writes should be idempotent.

Threading: no method runs on the event loop, and none may assume it runs on
the thread that called :meth:`~MemoryProvider.initialize`; calls to one
instance never overlap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ForgetResult:
    """What :meth:`MemoryProvider.forget_user` did with one person's memories.

    ``erased``: nothing of the person is left in the provider's backend or its
    files. Otherwise ``reason`` says why (no delete in the backend's API, the
    backend unreachable, ...), in words fit for the person's receipt.
    ``removed`` counts what went, where the provider can tell.
    """

    erased: bool
    reason: str = ""
    removed: int = 0

    @classmethod
    def cannot(cls, reason: str) -> ForgetResult:
        return cls(erased=False, reason=reason)


class MemoryProvider(ABC):
    """Base class of every memory provider.

    Errors: a provider may raise from any method; the manager logs the
    exception class with the provider's name and carries on without it for
    that call. Exception text never reaches the user or the model.
    """

    local_state: str = ""
    """What the provider keeps under ``chorus_home`` that is lost with it (``""``:
    nothing but caches). With ``database.url`` several replicas each have their own
    home, often thrown away on restart, so chorus starts such a provider only when
    ``memory.local_state`` says the home is ``persistent``."""

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
        * ``agent_context`` (``"primary" | "flush" | "background"``): which calls
          this instance will get (see the module docstring); a provider that
          models the user stays passive in ``"flush"``, whose prompts chorus
          writes itself;
        * ``chat_id`` (``str | None``), ``thread_id`` (``str | None``): where the
          conversation happens;
        * ``is_direct`` (``bool | None``): a one-to-one chat (None: not known);
        * ``parent_session_id`` (``str | None``): the session this one follows.

        and, from the gateway and its workers, ``embedder``
        (:class:`~memory.embeddings.Embedder`): the LLM endpoint's ``/v1/embeddings``,
        and ``account_keys`` (``list[str]``): when ``user_key`` is a linked person
        (``person:…``, see ``/link``), the user keys of the accounts linked into it
        (empty otherwise, and always in a session of a chat). Memories made under
        those keys before the link stay there unless :meth:`merge_users` joined
        them: a provider that cannot merge reads them too in its recall
        (:meth:`prefetch`, :meth:`queue_prefetch` and its search tools), while
        every write goes to ``user_key``.

        In a group session several people share (``sessions.scope: chat``),
        ``user_key`` is the chat's own key (``platform#chat:id``) and the
        per-turn calls but recall and tools say who is talking with ``speaker``.

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
        """Context recalled for this turn's user message ``query``; ``""`` for none.

        Called (``"primary"``) before each turn, on the request path: the turn
        waits at most ``memory.prefetch_timeout`` seconds (default 0.5) and then
        goes on without it; a result that comes later is used on the next turn.
        A slow backend returns what :meth:`queue_prefetch` cached. The result is
        sanitised and fenced in that turn's request only, never put in the system
        prompt nor kept in the history. Recall the session's own memory (its
        ``user_key``): no ``speaker`` is given, so in a session several people
        share it is the chat's, never one member's private memory.
        """
        return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Warm a cache for the next :meth:`prefetch`; ``query`` is the last user message.

        Called (``"background"``) by a job after each turn, off the request path.
        The cache must live where the ``"primary"`` instance reads it (the
        provider's backend or its files): it is another instance, often in
        another process. Like :meth:`prefetch`, for the session's own memory.
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

        Called (``"background"``) by a job, once per turn, in the session's
        order, so a slow backend never delays a reply. A turn withdrawn by
        ``/undo`` before its job ran is never synced. Recalled context has
        already been stripped from both texts. ``messages`` (the turn's
        OpenAI-format messages, tool calls included) and ``speaker`` (the user
        key of who wrote the message) are passed only when the override
        declares those parameters (or ``**kwargs``).
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

        Only called for names this provider listed in :meth:`get_tool_schemas`;
        ``kwargs`` carry ``session_id`` and, when known, ``speaker`` — never in a
        session several people share: there a tool reads and writes the session's
        own (the chat's) memory, since its result reaches every member.
        Return errors the model can act on as JSON (``{"success": false,
        "error": ...}``); an exception becomes a generic error result.
        """
        raise NotImplementedError(f"memory provider {self.name!r} does not handle {tool_name!r}")

    # -- teardown ------------------------------------------------------------

    def shutdown(self) -> None:
        """Flush local buffers and close connections; called once, at the end.

        At the end of the session, when the gateway drops an idle agent, and
        when a worker stops. Not called when a process is killed: see the module
        docstring on what must not live only in memory.
        """
        return None

    # -- optional hooks ------------------------------------------------------

    def merge_users(self, chorus_home: Path, sources: list[str], target: str) -> bool:
        """Accounts were linked into one person: join what is kept under the user keys
        ``sources`` into ``target``'s (the person key every later session passes as
        ``user_key``). Called on an instance that is not initialised, in the gateway.

        Returns whether the provider did; the default cannot (the memories made under
        the old keys stay there; sessions after the link write ``target``'s and get the
        sources as ``account_keys``, for a provider to read from both).
        The sources are left as they are: unlinking goes back to them.
        """
        return False

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """A turn begins (``"primary"``); ``kwargs`` may carry ``speaker`` and ``platform``."""
        return None

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """The session really ended (idle expiry, ``/new``, admin, shutdown).

        Called (``"background"``) once per session, by a job. ``messages`` is the
        conversation the transcript holds (turns undone by ``/undo`` left out);
        a user message carries ``"speaker"`` (the writer's user key) when it was
        recorded. Not called between turns.
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
        """The conversation was reset, rewound or compressed; ``kwargs["reason"]`` says which.

        ``reset=True`` (reason ``"new"``, ``"idle"``, ``"daily"``, ...): a fresh
        session ``new_session_id`` follows ``parent_session_id``; drop
        per-session buffers. Called on the new session's ``"primary"`` instance.

        ``rewound=True`` (reason ``"undo"`` or ``"retry"``): same session, its last
        turn withdrawn; drop per-turn state. The ``"primary"`` instance is told at
        once. The ``"background"`` instance is told in order with the syncs, with
        ``withdrawn_turn`` = ``{"turn": n, "user_content": ..., "assistant_content":
        ..., "speaker": ...}`` when that turn had been synced (``speaker`` only in a
        group session, the user key ``sync_turn`` had as ``speaker``): remove it if
        the backend can.

        Neither flag (reason ``"compression"``): the history was summarised; the
        session id stays.
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
        ``"memory"`` or ``"user"``; ``content`` is the new entry text (for
        ``remove``, the text that picked the entry). ``metadata`` (given only
        to a hook that declares it, or takes ``**kwargs``) has ``target``,
        ``agent_context``, ``origin`` (``"tool"``: the model's call in a turn;
        ``"flush"``: a flush's; ``"review"``: an admin approved a staged write),
        ``session_id``, ``old_text`` for ``replace`` and ``remove`` (the text
        that picked the entry the write changed) and ``speaker`` (who the write
        is by, when known).
        """
        return None

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        """A sub-agent finished ``task`` with ``result``; called on the parent only."""
        return None

    # -- a person's data -----------------------------------------------------

    cannot_export: str = "this memory provider has no way to export what it holds"
    """Why :meth:`export_user` returns None; shown in an export's manifest."""

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """Everything the provider holds about ``user_id`` (a user key), as JSON-able data.

        Called on an instance :meth:`initialize`-d for that user (``"background"``),
        for ``/export``. The result has at least ``"memories"``: a list of
        objects with the memory's ``"text"`` (and ``"id"`` where the backend has
        one). None: the provider cannot export (:attr:`cannot_export` says why).
        """
        return None

    def forget_user(self, user_id: str) -> ForgetResult:
        """Erase everything the provider holds about ``user_id``, in its backend and its files.

        Called on an instance :meth:`initialize`-d for that user (``"background"``),
        for ``/delete-me``; must be safe to call twice. What cannot be erased is
        said in the result, never silently kept.
        """
        return ForgetResult.cannot("this memory provider has no way to erase what it holds")

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

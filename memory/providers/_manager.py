"""MemoryManager: runs the built-in provider and at most one external provider.

The manager is the only caller of :class:`~memory.providers.MemoryProvider`
methods. It guarantees that

* one provider's failure never reaches the turn or another provider: each call
  is isolated and logged at WARNING with the provider's name and exception class;
* recalled text is sanitised (and fenced by the agent, with
  ``memory.providers.build_memory_context_block``), and recalled context is
  stripped from a turn before it is synced, so it is never stored back;
* a provider tool never shadows a core tool, and the first claim to a tool name wins;
* per-turn calls carry ``speaker`` (who is talking, in a session several people
  share) to the methods that accept it, and nothing they do not declare;
* recall (``prefetch``, ``queue_prefetch``) never carries ``speaker``: it reads the
  session's own memory, in a session several people share the chat's, never
  one member's (whose recall every member's later requests would carry).
  Nor does a provider tool in a session several people share: the agent leaves
  ``speaker`` out of :meth:`MemoryManager.handle_tool_call` there, so the tool
  reads and writes the chat's store (its result stays in the shared history).

Every method runs inline and is synchronous: what must stay off the request path
(``sync_turn``, ``queue_prefetch``, ``on_session_end``) is called by background
jobs (``agent.jobs``), and the agent bounds the one recall it waits for.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

from memory.providers._fence import sanitize_context, strip_memory_context
from memory.providers._provider import MemoryProvider
from memory.providers._routing import ToolRouter

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_RESERVED_TOOL_NAMES", "FailureHook", "MemoryManager"]

DEFAULT_RESERVED_TOOL_NAMES = frozenset({"memory", "session_search"})
"""Core tools the agent runs itself; no provider may take these names."""

BUILTIN_NAME = "builtin"

_Messages = list[dict[str, Any]]


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def _accepts(provider: MemoryProvider, method: str, keyword: str) -> bool:
    """Whether ``provider.<method>`` takes ``keyword`` (by name or through ``**kwargs``)."""
    try:
        params = inspect.signature(getattr(provider, method)).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


def _extra(provider: MemoryProvider, method: str, **values: Any) -> dict[str, Any]:
    """The keyword arguments of ``values`` that are set and that ``method`` accepts."""
    return {
        key: value
        for key, value in values.items()
        if value is not None and _accepts(provider, method, key)
    }


FailureHook = Callable[[str, str, str], None]
"""Told ``(provider name, method, exception class)`` of every failed provider call."""


def _call(provider: MemoryProvider, method: str, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """``(True, provider.<method>(*args, **kwargs))``, or ``(False, the exception)`` if it raised.

    Only the exception class is logged at WARNING: its text may quote memory.
    """
    try:
        return True, getattr(provider, method)(*args, **kwargs)
    except Exception as exc:
        name = _safe_name(provider)
        logger.warning("memory provider %r %s failed: %s", name, method, type(exc).__name__)
        logger.debug("memory provider %r %s failure", name, method, exc_info=exc)
        return False, exc


def _safe_name(provider: MemoryProvider) -> str:
    try:
        return str(provider.name)
    except Exception:
        return type(provider).__name__


class MemoryManager:
    """Fan-out, failure isolation, fencing and tool routing over one session's providers."""

    def __init__(
        self,
        *,
        reserved_tool_names: frozenset[str] = DEFAULT_RESERVED_TOOL_NAMES,
        on_failure: FailureHook | None = None,
    ) -> None:
        self._providers: list[MemoryProvider] = []
        self._router = ToolRouter(reserved_tool_names)
        self._on_failure = on_failure

    # -- registration --------------------------------------------------------

    @property
    def providers(self) -> list[MemoryProvider]:
        """The registered providers in registration order (a copy)."""
        return list(self._providers)

    @property
    def external(self) -> MemoryProvider | None:
        """The external provider, or None when only the built-in one runs."""
        return next((p for p in self._providers if p.name != BUILTIN_NAME), None)

    def add_provider(self, provider: MemoryProvider) -> None:
        """Register ``provider``; a second external provider is refused with a warning."""
        existing = self.external
        if provider.name != BUILTIN_NAME and existing is not None:
            logger.warning(
                "memory provider %r rejected: external provider %r is already registered "
                "and only one may run (choose it with memory.provider)",
                provider.name,
                existing.name,
            )
            return
        self._providers.append(provider)
        self._route_tools(provider)

    def initialize_all(self, session_id: str, **kwargs: Any) -> None:
        """Initialise every provider; one unavailable or failing is removed with its tools.

        ``kwargs`` must carry ``chorus_home``, ``platform``, ``user_key`` and
        ``agent_context`` (see :meth:`MemoryProvider.initialize`).
        """
        for provider in list(self._providers):
            if self._call(provider, "is_available") != (True, True):
                logger.warning("memory provider %r is not available; disabled", provider.name)
            elif self._call(provider, "initialize", session_id, **kwargs)[0]:
                continue
            else:
                logger.warning("memory provider %r disabled for this session", provider.name)
            self._providers.remove(provider)
        # A provider may decide its tools in initialize(); route them again.
        self._router.clear()
        for provider in self._providers:
            self._route_tools(provider)

    def _route_tools(self, provider: MemoryProvider) -> None:
        ok, schemas = self._call(provider, "get_tool_schemas")
        self._router.add(provider, schemas if ok and isinstance(schemas, list) else [])

    def _call(
        self, provider: MemoryProvider, method: str, *args: Any, **kwargs: Any
    ) -> tuple[bool, Any]:
        ok, result = _call(provider, method, *args, **kwargs)
        if not ok and self._on_failure is not None:
            try:
                self._on_failure(_safe_name(provider), method, type(result).__name__)
            except Exception:
                logger.warning("recording a memory provider failure failed", exc_info=True)
        return ok, result

    def _fan_out(self, method: str, *args: Any, **kwargs: Any) -> None:
        for provider in self._providers:
            self._call(provider, method, *args, **kwargs)

    def _texts(self, method: str, *args: Any, **kwargs: Any) -> list[str]:
        """Each provider's non-blank, sanitised text from ``method``, in order."""
        texts = (self._call(p, method, *args, **kwargs)[1] for p in self._providers)
        cleaned = (sanitize_context(t).strip() for t in texts if isinstance(t, str))
        return [t for t in cleaned if t]

    # -- recall --------------------------------------------------------------

    def build_system_prompt_blocks(self) -> list[str]:
        """The providers' non-empty static system prompt blocks, in order."""
        return self._texts("system_prompt_block")

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Every provider's recall for ``query``: sanitised and joined, not fenced yet.

        From the session's own memory (its ``user_key``): no provider is told a speaker.
        """
        query = strip_memory_context(query)
        texts = (
            self._call(p, "prefetch", query, session_id=session_id)[1] for p in self._providers
        )
        cleaned = (sanitize_context(t).strip() for t in texts if isinstance(t, str))
        return "\n\n".join(t for t in cleaned if t)

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Let providers that warm a cache recall for ``query`` (called by a job, after a turn).

        For the session's own memory, as :meth:`prefetch` reads it.
        """
        query = strip_memory_context(query)
        if not query.strip():
            return
        for p in self._providers:
            self._call(p, "queue_prefetch", query, session_id=session_id)

    # -- write ---------------------------------------------------------------

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: _Messages | None = None,
        speaker: str | None = None,
    ) -> None:
        """Strip recalled context from the turn, then hand it to each provider in order.

        ``messages`` (the turn's OpenAI messages) and ``speaker`` go only to a
        ``sync_turn`` that declares them (or takes ``**kwargs``).
        """
        user, assistant = (
            strip_memory_context(user_content),
            strip_memory_context(assistant_content),
        )
        if not (user.strip() or assistant.strip()):
            return
        for p in self._providers:
            extra = _extra(p, "sync_turn", messages=messages, speaker=speaker)
            self._call(p, "sync_turn", user, assistant, session_id=session_id, **extra)

    # -- tools ---------------------------------------------------------------

    def get_all_tool_schemas(self) -> list[dict[str, Any]]:
        """The routed provider tools as OpenAI ``tools`` entries."""
        return self._router.schemas()

    def has_tool(self, name: str) -> bool:
        """Whether a provider handles the tool ``name``."""
        return self._router.owner(name) is not None

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a provider tool; every failure comes back as a JSON error, never an exception.

        ``kwargs`` (``session_id``, ``speaker``) go to the provider's ``handle_tool_call``;
        without ``speaker`` the tool acts on the session's own memory.
        """
        provider = self._router.owner(name)
        if provider is None:
            return _error(f"no memory provider handles the tool '{name}'")
        _, result = self._call(provider, "handle_tool_call", name, args, **kwargs)
        if not isinstance(result, str):
            return _error(f"the memory provider '{provider.name}' could not run '{name}'")
        return result

    # -- hooks ---------------------------------------------------------------

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """Tell every provider a turn begins."""
        self._fan_out("on_turn_start", turn_number, message, **kwargs)

    def on_session_end(self, messages: _Messages) -> None:
        """Tell every provider the session ended, with its whole transcript."""
        self._fan_out("on_session_end", messages)

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """Tell every provider the agent moved to ``new_session_id``."""
        self._fan_out(
            "on_session_switch",
            new_session_id,
            parent_session_id=parent_session_id,
            reset=reset,
            rewound=rewound,
            **kwargs,
        )

    def on_pre_compress(self, messages: _Messages) -> str:
        """What providers want kept in the compression summary, joined by blank lines."""
        return "\n\n".join(self._texts("on_pre_compress", messages))

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """Mirror a write of the built-in ``memory`` tool to every provider.

        ``metadata`` goes by keyword, and only to a provider whose hook takes it: a
        hook of the three documented arguments works too.
        """
        for provider in self._providers:
            extra = (
                {"metadata": metadata} if _accepts(provider, "on_memory_write", "metadata") else {}
            )
            self._call(provider, "on_memory_write", action, target, content, **extra)

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        """Tell every provider a sub-agent finished ``task``."""
        self._fan_out("on_delegation", task, result, child_session_id=child_session_id, **kwargs)

    # -- teardown ------------------------------------------------------------

    def shutdown_all(self) -> None:
        """Shut providers down in reverse registration order, each isolated."""
        for provider in reversed(self._providers):
            self._call(provider, "shutdown")

"""MemoryManager: runs the built-in provider and at most one external provider.

The manager is the only caller of :class:`~memory.provider.MemoryProvider`
methods. It guarantees that

* one provider's failure never reaches the turn or another provider: each call
  is isolated and logged at WARNING with the provider's name and exception class;
* recalled text is sanitised and fenced (:mod:`memory.fence`), and recalled
  context is stripped from a turn before it is synced, so it is never stored back;
* a provider tool never shadows a core tool, and the first claim to a tool name wins;
* turn syncs and background prefetches never run on the request path: they go
  to a :class:`Background` that runs them one at a time, in submission order.

All methods are synchronous; the agent calls them off its event loop.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from memory.providers._fence import (
    build_memory_context_block,
    sanitize_context,
    strip_memory_context,
)
from memory.providers._provider import MemoryProvider
from memory.providers._routing import ToolRouter
from memory.providers._threads import ThreadBackground

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_RESERVED_TOOL_NAMES", "Background", "MemoryManager", "ThreadBackground"]

DEFAULT_RESERVED_TOOL_NAMES = frozenset({"memory", "session_search"})
"""Core tools the agent runs itself; no provider may take these names."""

DEFAULT_DRAIN_TIMEOUT = 5.0
"""Seconds :meth:`MemoryManager.shutdown_all` waits for background work still running."""

BUILTIN_NAME = "builtin"

_Messages = list[dict[str, Any]]


class Background(Protocol):
    """Where the manager sends work that must not run on the request path."""

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` later; jobs run one at a time, in submission order."""

    def flush(self, timeout: float | None) -> bool:
        """Wait until everything submitted so far has run; False if ``timeout`` expired."""

    def close(self, timeout: float) -> None:
        """Drop work not yet started and wait at most ``timeout`` for the rest."""


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def _accepts(provider: MemoryProvider, method: str, keyword: str) -> bool:
    """Whether ``provider.<method>`` takes ``keyword`` (by name or through ``**kwargs``)."""
    try:
        params = inspect.signature(getattr(provider, method)).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


def _accepts_messages(provider: MemoryProvider) -> bool:
    """Whether ``provider.sync_turn`` takes the ``messages`` keyword."""
    return _accepts(provider, "sync_turn", "messages")


def _call(provider: MemoryProvider, method: str, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """``(True, provider.<method>(*args, **kwargs))``, or ``(False, None)`` if it raised.

    Only the exception class is logged at WARNING: its text may quote memory.
    """
    try:
        return True, getattr(provider, method)(*args, **kwargs)
    except Exception as exc:
        name = _safe_name(provider)
        logger.warning("memory provider %r %s failed: %s", name, method, type(exc).__name__)
        logger.debug("memory provider %r %s failure", name, method, exc_info=exc)
        return False, None


def _fan_out(providers: list[MemoryProvider], method: str, *args: Any, **kwargs: Any) -> None:
    for provider in providers:
        _call(provider, method, *args, **kwargs)


def _sync_turn(
    providers: list[MemoryProvider],
    user_content: str,
    assistant_content: str,
    session_id: str,
    messages: _Messages | None,
) -> None:
    """Strip recalled context from the turn, then hand it to each provider in order."""
    user, assistant = strip_memory_context(user_content), strip_memory_context(assistant_content)
    if not (user.strip() or assistant.strip()):
        return
    for provider in list(providers):
        extra = (
            {"messages": messages} if messages is not None and _accepts_messages(provider) else {}
        )
        _call(provider, "sync_turn", user, assistant, session_id=session_id, **extra)


def _copy(messages: _Messages | None) -> _Messages | None:
    """A snapshot of the turn's messages: the caller may keep appending to its list."""
    return None if messages is None else [dict(m) for m in messages]


def _safe_name(provider: MemoryProvider) -> str:
    try:
        return str(provider.name)
    except Exception:
        return type(provider).__name__


def _overrides(provider: MemoryProvider, method: str) -> bool:
    return getattr(type(provider), method, None) is not getattr(MemoryProvider, method)


class MemoryManager:
    """Fan-out, failure isolation, fencing and tool routing over one session's providers."""

    def __init__(
        self,
        *,
        background: Background | None = None,
        reserved_tool_names: frozenset[str] = DEFAULT_RESERVED_TOOL_NAMES,
    ) -> None:
        self._providers: list[MemoryProvider] = []
        self._router = ToolRouter(reserved_tool_names)
        self._background: Background = background if background is not None else ThreadBackground()

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
            if _call(provider, "is_available") != (True, True):
                logger.warning("memory provider %r is not available; disabled", provider.name)
            elif _call(provider, "initialize", session_id, **kwargs)[0]:
                continue
            else:
                logger.warning("memory provider %r disabled for this session", provider.name)
            self._providers.remove(provider)
        # A provider may decide its tools in initialize(); route them again.
        self._router.clear()
        for provider in self._providers:
            self._route_tools(provider)

    def _route_tools(self, provider: MemoryProvider) -> None:
        ok, schemas = _call(provider, "get_tool_schemas")
        self._router.add(provider, schemas if ok and isinstance(schemas, list) else [])

    def _fan_out(self, method: str, *args: Any, **kwargs: Any) -> None:
        _fan_out(self._providers, method, *args, **kwargs)

    def _texts(self, method: str, *args: Any, **kwargs: Any) -> list[str]:
        """Each provider's non-blank, sanitised text from ``method``, in order."""
        texts = (_call(p, method, *args, **kwargs)[1] for p in self._providers)
        cleaned = (sanitize_context(t).strip() for t in texts if isinstance(t, str))
        return [t for t in cleaned if t]

    # -- recall --------------------------------------------------------------

    def build_system_prompt_blocks(self) -> list[str]:
        """The providers' non-empty static system prompt blocks, in order."""
        return self._texts("system_prompt_block")

    def prefetch_now(self, query: str, *, session_id: str = "") -> str:
        """Every provider's recall for ``query``: sanitised and joined, not fenced."""
        query = strip_memory_context(query)
        return "\n\n".join(self._texts("prefetch", query, session_id=session_id))

    def prefetch_all(self, query: str, *, session_id: str = "") -> str:
        """The fenced recall block to append to the user message; ``""`` when nothing."""
        return build_memory_context_block(self.prefetch_now(query, session_id=session_id))

    def queue_prefetch_all(self, query: str, *, session_id: str = "") -> None:
        """Ask providers, in the background, to recall for ``query`` ahead of the next turn."""
        query = strip_memory_context(query)
        providers = [p for p in self._providers if _overrides(p, "queue_prefetch")]
        if providers and query.strip():
            self._background.submit(
                functools.partial(
                    _fan_out, providers, "queue_prefetch", query, session_id=session_id
                )
            )

    # -- write ---------------------------------------------------------------

    def sync_all(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: _Messages | None = None,
    ) -> None:
        """Queue the finished turn for every provider and return at once."""
        providers = [p for p in self._providers if _overrides(p, "sync_turn")]
        if providers:
            turn = (user_content, assistant_content, session_id, _copy(messages))
            self._background.submit(functools.partial(_sync_turn, providers, *turn))

    def sync_turn_now(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: _Messages | None = None,
    ) -> None:
        """The fan-out of :meth:`sync_all`, run inline by job code already off the request path."""
        _sync_turn(self._providers, user_content, assistant_content, session_id, messages)

    def flush_pending(self, timeout: float | None = None) -> bool:
        """Wait until queued syncs and prefetches have run; False if ``timeout`` expired."""
        return self._background.flush(timeout)

    # -- tools ---------------------------------------------------------------

    def get_all_tool_schemas(self) -> list[dict[str, Any]]:
        """The routed provider tools as OpenAI ``tools`` entries."""
        return self._router.schemas()

    def get_all_tool_names(self) -> list[str]:
        """Names of the routed provider tools."""
        return self._router.names()

    def has_tool(self, name: str) -> bool:
        """Whether a provider handles the tool ``name``."""
        return self._router.owner(name) is not None

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a provider tool; every failure comes back as a JSON error, never an exception."""
        provider = self._router.owner(name)
        if provider is None:
            return _error(f"no memory provider handles the tool '{name}'")
        _, result = _call(provider, "handle_tool_call", name, args, **kwargs)
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
            _call(provider, "on_memory_write", action, target, content, **extra)

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        """Tell every provider a sub-agent finished ``task``."""
        self._fan_out("on_delegation", task, result, child_session_id=child_session_id, **kwargs)

    # -- teardown ------------------------------------------------------------

    def shutdown_all(self, drain_timeout: float = DEFAULT_DRAIN_TIMEOUT) -> None:
        """Drain background work (at most ``drain_timeout`` s), then shut providers down.

        Providers are shut down in reverse registration order, each isolated.
        A sync still wedged after the drain is abandoned, never awaited.
        """
        try:
            self._background.close(drain_timeout)
        except Exception as exc:
            logger.warning("memory background close failed: %s", type(exc).__name__)
        for provider in reversed(self._providers):
            _call(provider, "shutdown")

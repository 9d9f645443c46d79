"""Memory providers: the ``MemoryProvider`` contract, the built-in provider, the manager.

- ``MemoryProvider`` is what an external memory backend implements (plugins in
  ``plugins/memory/<name>/`` or ``CHORUS_HOME/plugins/<name>/``).
- ``BuiltinMemoryProvider`` wraps the curated MEMORY.md / USER.md files.
- ``MemoryManager`` runs the built-in provider plus at most one external one:
  failure isolation per provider, tool routing that never lets a provider
  shadow a core tool, context fencing of recalled text, bounded shutdown.
"""

from memory.providers._builtin import BUILTIN_PROVIDER_NAME, BuiltinMemoryProvider
from memory.providers._fence import (
    FENCE_CLOSE,
    FENCE_OPEN,
    ContextScrubber,
    build_memory_context_block,
    sanitize_context,
    strip_memory_context,
)
from memory.providers._health import ProviderEvent, ProviderHealth
from memory.providers._manager import DEFAULT_RESERVED_TOOL_NAMES, FailureHook, MemoryManager
from memory.providers._provider import AgentContext, ForgetResult, MemoryProvider, provider_dir
from memory.providers._withdrawn import WithdrawnTurn, withdrawn_turn

__all__ = [
    "BUILTIN_PROVIDER_NAME",
    "DEFAULT_RESERVED_TOOL_NAMES",
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "AgentContext",
    "BuiltinMemoryProvider",
    "ContextScrubber",
    "FailureHook",
    "ForgetResult",
    "MemoryManager",
    "MemoryProvider",
    "ProviderEvent",
    "ProviderHealth",
    "WithdrawnTurn",
    "build_memory_context_block",
    "provider_dir",
    "sanitize_context",
    "strip_memory_context",
    "withdrawn_turn",
]

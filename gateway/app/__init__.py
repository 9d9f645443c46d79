"""The processes chorus runs, wired from settings: gateway, worker, console.

Each name is imported on first use, so that a command that needs only the job queue
does not load the whole gateway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway._lazy import lazy_names

if TYPE_CHECKING:
    from gateway.app._agents import AgentFactory, require_llm_endpoint
    from gateway.app._background import (
        Background,
        job_context,
        provider_source,
        queue_from_settings,
        start_background,
    )
    from gateway.app._console import run_console
    from gateway.app._gateway_stack import GatewayStack
    from gateway.app._service import enabled_adapters, run_gateway, serve
    from gateway.app._settled import settle_process
    from gateway.app._stack import open_stack
    from gateway.app._worker import run_worker

__all__ = [
    "AgentFactory",
    "Background",
    "GatewayStack",
    "enabled_adapters",
    "job_context",
    "open_stack",
    "provider_source",
    "queue_from_settings",
    "require_llm_endpoint",
    "run_console",
    "run_gateway",
    "run_worker",
    "serve",
    "settle_process",
    "start_background",
]


_HOME = {
    "AgentFactory": ("gateway.app._agents", "AgentFactory"),
    "require_llm_endpoint": ("gateway.app._agents", "require_llm_endpoint"),
    "Background": ("gateway.app._background", "Background"),
    "job_context": ("gateway.app._background", "job_context"),
    "provider_source": ("gateway.app._background", "provider_source"),
    "queue_from_settings": ("gateway.app._background", "queue_from_settings"),
    "start_background": ("gateway.app._background", "start_background"),
    "run_console": ("gateway.app._console", "run_console"),
    "enabled_adapters": ("gateway.app._service", "enabled_adapters"),
    "run_gateway": ("gateway.app._service", "run_gateway"),
    "serve": ("gateway.app._service", "serve"),
    "settle_process": ("gateway.app._settled", "settle_process"),
    "GatewayStack": ("gateway.app._gateway_stack", "GatewayStack"),
    "open_stack": ("gateway.app._stack", "open_stack"),
    "run_worker": ("gateway.app._worker", "run_worker"),
}
"""Where each name of ``__all__`` is defined; imported on first use."""


__getattr__ = lazy_names(__name__, _HOME, globals())

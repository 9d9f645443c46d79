"""The processes chorus runs, wired from settings: gateway, worker, console."""

from gateway.app._agents import AgentFactory, require_llm_endpoint
from gateway.app._background import (
    Background,
    job_context,
    provider_source,
    queue_from_settings,
    start_background,
)
from gateway.app._console import run_console
from gateway.app._service import enabled_adapters, run_gateway, serve
from gateway.app._settled import settle_process
from gateway.app._stack import GatewayStack, open_stack
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

"""The spans of the agent's steps, by the GenAI semantic conventions where they apply
(``gen_ai.*``): each LLM call, each tool call, recall and provider hooks. Only names,
counts and outcomes; words only with ``observability.include_content``."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator

from agent.errors import BudgetExhausted, LLMRequestError, LLMUnavailable
from agent.tracing import NO_SPAN, NoSpan, current
from agent.usage import Charge

__all__ = [
    "call_outcome",
    "llm_call_done",
    "llm_call_failed",
    "llm_call_span",
    "provider_span",
    "tool_outcome",
    "tool_span",
]


def call_outcome(exc: BaseException) -> str:
    """What a failed LLM call counts as (``chorus_llm_calls_total{outcome}``)."""
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    if isinstance(exc, LLMUnavailable):
        return "unavailable"
    if isinstance(exc, LLMRequestError):
        return "refused"
    if isinstance(exc, BudgetExhausted):
        return "over_budget"
    return "error"


def llm_call_span(model: str, charge: Charge | None) -> NoSpan:
    """A started ``chat <model>`` span (a child of the current one), ended by the caller."""
    tracer = current()
    if not tracer.enabled:
        return NO_SPAN
    span = tracer.started(
        f"chat {model}",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": model,
        },
    )
    if charge is not None:
        span.set("chorus.purpose", charge.purpose)
    return span


def llm_call_done(
    span: NoSpan, finish: str | None, inputs: int, outputs: int, *, estimated: bool
) -> None:
    span.set("gen_ai.usage.input_tokens", inputs)
    span.set("gen_ai.usage.output_tokens", outputs)
    span.set("gen_ai.response.finish_reasons", [finish] if finish else [])
    if estimated:
        span.set("chorus.usage_estimated", True)
    span.set("chorus.outcome", "ok")
    span.end()


def llm_call_failed(span: NoSpan, exc: BaseException) -> str:
    """End the call's span as failed; the outcome."""
    outcome = call_outcome(exc)
    span.fail(outcome)
    span.end()
    return outcome


def tool_outcome(result: str) -> str:
    """``error`` when a tool's JSON result says it failed, else ``ok``."""
    try:
        parsed = json.loads(result)
    except ValueError:
        return "ok"
    failed = isinstance(parsed, dict) and (parsed.get("success") is False or "error" in parsed)
    return "error" if failed else "ok"


@contextlib.contextmanager
def tool_span(name: str, call_id: str, arguments: str) -> Iterator[NoSpan]:
    """``execute_tool <name>``: the tool's name and outcome; its arguments only with content."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }
    with current().span(f"execute_tool {name}", **attributes) as span:
        span.content("gen_ai.tool.call.arguments", arguments)
        yield span


@contextlib.contextmanager
def provider_span(hook: str, provider: str | None = None) -> Iterator[NoSpan]:
    """``chorus.provider <hook>``: one call into the memory providers."""
    with current().span(f"chorus.provider {hook}", **{"chorus.provider.hook": hook}) as span:
        span.set("chorus.provider.name", provider)
        yield span

"""The one client of the LLM endpoint (the only module that imports ``openai``).

Every call streams (``stream_options.include_usage``), so the caller can show
text as it arrives and always gets token usage. Transient failures —
connection errors (also a connection dropped mid-answer), timeouts, 429 and
5xx — are retried with exponential
backoff as long as nothing has been streamed to the caller yet; after that, or
when retries run out, ``LLMUnavailable`` is raised. A refused request (400,
401, 404…) raises ``LLMRequestError`` at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from agent.errors import LLMError, LLMRequestError, LLMUnavailable
from agent.llm_stream import error_message, stream_chunks
from agent.messages import AssistantMessage, ChatMessage
from agent.settings import LLMSettings
from agent.tracing.spans import llm_call_done, llm_call_failed, llm_call_span
from agent.usage import OUTPUT_ALLOWANCE, Charge, UsageMeter, estimate_text, estimate_tokens
from memory.embeddings import EmbeddingsError, EmbeddingsUnsupported

logger = logging.getLogger(__name__)

DeltaCallback = Callable[[str], Awaitable[None] | None]
CallObserver = Callable[[float, bool], None]
"""Told the duration of every ``complete()`` and whether it failed (for metrics)."""
Sleep = Callable[[float], Awaitable[None]]

DRAIN_SECONDS = 2.0
"""How long the end of a streamed body may take after ``[DONE]`` before it is dropped."""
BACKOFF_BASE_SECONDS = 0.5
"""First retry waits about this long; each further retry doubles it."""

BACKOFF_MAX_SECONDS = 20.0
"""No single wait between retries is longer than this."""

PLACEHOLDER_API_KEY = "not-needed"
"""Sent when no key is configured: local OpenAI-compatible servers ignore it."""


@dataclass
class Usage:
    """Tokens of one or more calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True)
class ToolCallRequest:
    """One function call the model asked for; ``arguments`` is raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class LLMResponse:
    content: str
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    usage_estimated: bool = False
    """The endpoint reported no usage: ``usage`` is an estimate from the texts."""

    def to_message(self) -> AssistantMessage:
        """The assistant message to append to history."""
        message: AssistantMessage = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


class LLMClient:
    """Chat completions against any OpenAI-compatible endpoint."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Sleep = asyncio.sleep,
        observers: Sequence[CallObserver] = (),
        meter: UsageMeter | None = None,
        counters: Sequence[Callable[[str, str], None]] = (),
    ) -> None:
        self.settings = settings
        self.meter = meter
        """Reserves, settles and records every charged call (the gateway's ledger and budgets)."""
        self._sleep = sleep
        self.observers: tuple[CallObserver, ...] = tuple(observers)
        """Told the seconds and outcome of every call (the gateway's metrics)."""
        self.counters: tuple[Callable[[str, str], None], ...] = tuple(counters)
        """Told the model and outcome (``ok``, ``unavailable``, …) of every call."""
        key = settings.api_key.get_secret_value() if settings.api_key else PLACEHOLDER_API_KEY
        self._client = openai.AsyncOpenAI(
            api_key=key or PLACEHOLDER_API_KEY,
            base_url=settings.base_url,
            timeout=settings.timeout_seconds,
            max_retries=0,  # retries are ours: they must stop once text was streamed
        )
        # openai imports its resource modules on first use: here, at start-up, not in
        # the first turn (where the import held the event loop for a few hundred ms)
        self._client.chat.completions  # noqa: B018
        self._client.models  # noqa: B018

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def auxiliary_model(self) -> str:
        """The model for flush and summaries: ``llm.auxiliary_model`` or the main one."""
        return self.settings.auxiliary_model or self.settings.model

    async def aclose(self) -> None:
        await self._client.close()

    async def transcribe(self, audio: bytes, *, filename: str, model: str) -> str:
        """The words spoken in ``audio`` (``/v1/audio/transcriptions``; the endpoint knows
        the format by ``filename``'s extension). ``LLMUnavailable`` when the endpoint is
        unreachable or overloaded, ``LLMRequestError`` when it refuses the file."""
        try:
            result = await self._client.audio.transcriptions.create(
                model=model, file=(filename, audio), response_format="json"
            )
        except openai.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                raise LLMUnavailable(f"transcription: HTTP {exc.status_code}") from exc
            raise LLMRequestError(f"transcription: HTTP {exc.status_code}") from exc
        except openai.APIError as exc:  # connection refused or dropped, timeout
            raise LLMUnavailable(f"transcription: {type(exc).__name__}") from exc
        return result.text

    async def check(self) -> str:
        """Ask the endpoint for its models once (no retries); raises LLMError when it fails."""
        try:
            page = await self._client.with_options(max_retries=0, timeout=10).models.list()
        except openai.APIStatusError as exc:
            raise LLMRequestError(f"HTTP {exc.status_code} from the endpoint") from exc
        except (openai.APIError, OSError) as exc:
            raise LLMUnavailable(f"endpoint unreachable ({type(exc).__name__})") from exc
        names = [model.id for model in page.data]
        if names and self.model not in names:
            return f"reachable; model {self.model!r} not among {len(names)} listed"
        return f"reachable; model {self.model!r}"

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        model: str | None = None,
        on_delta: DeltaCallback | None = None,
        charge: Charge | None = None,
    ) -> LLMResponse:
        """One model answer, retried on transient failures until text has streamed.

        With a ``charge`` and a meter, an estimate is reserved first (a turn's call
        may be refused there: ``BudgetExhausted``, no request made) and the usage
        is settled after.
        """
        name = model or self.model
        meter = self.meter if charge is not None else None
        hold: object = None
        if meter is not None and charge is not None:
            estimate = estimate_tokens(messages, tools) + OUTPUT_ALLOWANCE
            hold = await meter.reserve(charge, name, estimate)
        started = time.monotonic()
        span = llm_call_span(name, charge)
        try:
            response = await self._complete(messages, tools, model, on_delta)
        except BaseException as exc:
            self._counted(name, llm_call_failed(span, exc))
            if isinstance(exc, LLMError):
                self._observe(time.monotonic() - started, True)
            if meter is not None:
                await _quietly(meter.release(hold))
            raise
        self._observe(time.monotonic() - started, False)
        if response.usage_estimated:
            response.usage = Usage(
                prompt_tokens=estimate_tokens(messages, tools),
                completion_tokens=estimate_text(
                    response.content + "".join(c.name + c.arguments for c in response.tool_calls)
                ),
            )
        llm_call_done(
            span,
            response.finish_reason,
            response.usage.prompt_tokens,
            response.usage.completion_tokens,
            estimated=response.usage_estimated,
        )
        self._counted(name, "ok")
        if meter is not None:
            used = response.usage
            await _quietly(
                meter.settle(
                    hold,
                    name,
                    (used.prompt_tokens, used.cached_tokens, used.completion_tokens),
                    estimated=response.usage_estimated,
                )
            )
        return response

    def _counted(self, model: str, outcome: str) -> None:
        for count in self.counters:
            try:
                count(model, outcome)
            except Exception:
                logger.exception("LLM call counter failed")

    def _observe(self, seconds: float, failed: bool) -> None:
        for observer in self.observers:
            try:
                observer(seconds, failed)
            except Exception:
                logger.exception("LLM call observer failed")

    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        model: str | None,
        on_delta: DeltaCallback | None,
    ) -> LLMResponse:
        attempts = self.settings.max_retries + 1
        streamed = [False]
        for attempt in range(attempts):
            try:
                return await self._stream_once(
                    messages, tools, model or self.model, on_delta, streamed
                )
            except (openai.APIConnectionError, OSError) as exc:
                reason, retry_after = _cause(exc), None
            except openai.APIStatusError as exc:
                if exc.status_code != 429 and exc.status_code < 500:
                    logger.error("LLM endpoint refused the request: HTTP %s", exc.status_code)
                    raise LLMRequestError(
                        f"LLM endpoint refused the request: HTTP {exc.status_code}: {exc.message}"
                    ) from exc
                reason, retry_after = f"HTTP {exc.status_code}", _retry_after(exc.response)
            except openai.APIError as exc:  # an error event inside the stream
                reason, retry_after = f"stream error ({type(exc).__name__})", None
            if streamed[0] or attempt == attempts - 1:
                logger.error("LLM call failed after %d attempt(s): %s", attempt + 1, reason)
                raise LLMUnavailable(f"LLM endpoint unavailable: {reason}")
            delay = retry_after if retry_after is not None else self._backoff(attempt)
            logger.warning("LLM call failed (%s); retry %d in %.1fs", reason, attempt + 1, delay)
            await self._sleep(delay)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        delay = BACKOFF_BASE_SECONDS * (2**attempt)
        return float(min(BACKOFF_MAX_SECONDS, delay + random.uniform(0, delay / 4)))

    async def _stream_once(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        model: str,
        on_delta: DeltaCallback | None,
        streamed: list[bool],
    ) -> LLMResponse:
        request: dict[str, Any] = {
            "model": model,
            "messages": list(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = list(tools)
        create: Any = self._client.chat.completions.with_streaming_response.create
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        response = LLMResponse(content="", usage_estimated=True)
        async with create(**request) as raw:

            def failed(error: Any) -> Exception:
                return openai.APIError(error_message(error), raw.http_request, body=error)

            lines = _transport_errors(raw.iter_lines(), raw.http_request)
            async for chunk in stream_chunks(lines, failed):
                if chunk.get("usage"):
                    response.usage = _usage_of(chunk["usage"])
                    response.usage_estimated = False
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if choice.get("finish_reason"):
                        response.finish_reason = choice["finish_reason"]
                    content = delta.get("content")
                    if content:
                        text.append(content)
                        if on_delta is not None:
                            streamed[0] = True
                            await _call(on_delta, content)
                    for tc in delta.get("tool_calls") or ():
                        _add_call(calls, tc)
            await _read_to_the_end(lines)
        response.content = "".join(text)
        response.tool_calls = [
            ToolCallRequest(
                id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["arguments"]
            )
            for index, slot in sorted(calls.items())
        ]
        return response


async def _transport_errors(lines: AsyncIterator[str], request: Any) -> AsyncIterator[str]:
    """``lines``, a failure to read them (the connection dropped mid-body: httpx's
    ``RemoteProtocolError``, a read timeout) raised as the client raises one of sending
    the request: ``APIConnectionError``, so it is retried or reported like one."""
    try:
        async for line in lines:
            yield line
    except Exception as exc:
        raise openai.APIConnectionError(request=request) from exc


async def _read_to_the_end(lines: AsyncIterator[str]) -> None:
    """Read what follows ``[DONE]`` (the body's end), so the connection goes back to the
    pool for the next call instead of being closed (a new TCP and TLS set-up each turn)."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in lines:
                pass
    except Exception as exc:  # the connection is closed instead; the answer is complete
        logger.debug("the end of a streamed answer was not read (%s)", type(exc).__name__)


async def _quietly(step: Awaitable[None]) -> None:
    """Run a meter's bookkeeping; its failure is logged, never the call's."""
    try:
        await step
    except Exception as exc:
        logger.warning("usage not recorded (%s: %s)", type(exc).__name__, exc)


async def _call(callback: DeltaCallback, text: str) -> None:
    result = callback(text)
    if inspect.isawaitable(result):
        await result


def _cause(exc: BaseException) -> str:
    """The failure's class, with the transport's own error it came from (when one did)."""
    name = type(exc).__name__
    cause = exc.__cause__
    return f"{name} ({type(cause).__name__})" if cause is not None else name


def _add_call(calls: dict[int, dict[str, str]], tc: dict[str, Any]) -> None:
    """Fold one streamed tool-call fragment into the call it belongs to."""
    slot = calls.setdefault(int(tc.get("index") or 0), {"id": "", "name": "", "arguments": ""})
    function = tc.get("function") or {}
    if tc.get("id"):
        slot["id"] = tc["id"]
    if function.get("name"):
        slot["name"] += function["name"]
    if function.get("arguments"):
        slot["arguments"] += function["arguments"]


def _count(section: Any, key: str) -> int:
    value = section.get(key) if isinstance(section, dict) else None
    return value if isinstance(value, int) else 0


def _usage_of(usage: dict[str, Any]) -> Usage:
    return Usage(
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        cached_tokens=_count(usage.get("prompt_tokens_details"), "cached_tokens"),
        reasoning_tokens=_count(usage.get("completion_tokens_details"), "reasoning_tokens"),
    )


def _retry_after(response: Any, now: float | None = None) -> float | None:
    """Seconds the server asks to wait, capped; None when it does not say (or says nonsense).

    ``retry-after-ms`` (OpenAI's) wins over ``Retry-After``, which may be seconds
    or an HTTP date.
    """
    if response is None:
        return None
    headers = response.headers
    seconds: float | None = None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            seconds = float(millis) / 1000
    value = headers.get("retry-after")
    if seconds is None and value is not None:
        try:
            seconds = float(value)
        except ValueError:
            with contextlib.suppress(TypeError, ValueError, IndexError):
                when = parsedate_to_datetime(value)
                seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds is None or seconds != seconds or seconds < 0:
        return None
    return min(seconds, BACKOFF_MAX_SECONDS)


UNSUPPORTED_STATUSES = frozenset({400, 404, 405, 422, 501})
"""Answers to ``/v1/embeddings`` that mean the endpoint (or model) has no embeddings."""


_NO_EMBEDDINGS: dict[tuple[str | None, str], str] = {}
"""(base URL, model) → why that endpoint gives no embeddings, as learnt by this process."""


class LLMEmbeddings:
    """``/v1/embeddings`` of the chat endpoint (same base URL and key): a memory Embedder.

    The first answer that says the endpoint has no embeddings for a model is
    logged once per process (INFO) and remembered: later calls, from any
    instance, raise :class:`EmbeddingsUnsupported` without asking.
    """

    def __init__(self, settings: LLMSettings, *, timeout_seconds: float = 10.0) -> None:
        key = settings.api_key.get_secret_value() if settings.api_key else PLACEHOLDER_API_KEY
        self._base_url = settings.base_url
        self._client = openai.OpenAI(
            api_key=key or PLACEHOLDER_API_KEY,
            base_url=settings.base_url,
            timeout=min(timeout_seconds, settings.timeout_seconds),
            max_retries=1,
        )

    def embed(self, texts: Sequence[str], *, model: str) -> list[list[float]]:
        known = _NO_EMBEDDINGS.get((self._base_url, model))
        if known is not None:
            raise EmbeddingsUnsupported(known)
        try:
            response = self._client.embeddings.create(
                model=model, input=list(texts), encoding_format="float"
            )
            rows = sorted(response.data, key=lambda d: d.index)
            vectors = [[float(v) for v in row.embedding] for row in rows]
        except openai.APIStatusError as exc:
            if exc.status_code in UNSUPPORTED_STATUSES:
                why = f"HTTP {exc.status_code} for model {model!r}"
                if _NO_EMBEDDINGS.setdefault((self._base_url, model), why) == why:
                    logger.info(
                        "the LLM endpoint gives no embeddings (%s); memory recall goes on "
                        "without them",
                        why,
                    )
                raise EmbeddingsUnsupported(why) from exc
            raise EmbeddingsError(f"HTTP {exc.status_code}") from exc
        except (openai.APIError, OSError) as exc:
            raise EmbeddingsError(type(exc).__name__) from exc
        except (TypeError, ValueError, AttributeError) as exc:
            raise EmbeddingsError("the endpoint's answer is not a list of embeddings") from exc
        if len(vectors) != len(texts) or len({len(v) for v in vectors}) > 1:
            raise EmbeddingsError("the endpoint answered with the wrong number of embeddings")
        return vectors

    def close(self) -> None:
        self._client.close()


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments as a dict; raises ValueError with a model-readable reason."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value

"""The one client of the LLM endpoints (the only module that imports ``openai``).

Every call streams (``stream_options.include_usage``), so the caller can show
text as it arrives and always gets token usage. Transient failures —
connection errors (also a connection dropped mid-answer), timeouts, 429 and
5xx — are retried with exponential backoff as long as nothing has been
streamed to the caller yet, or, with ``llm.fallbacks``, move on to the next
endpoint (``agent._failover``); when every attempt failed, ``LLMUnavailable``
is raised. A refused request (400, 401, 404…) raises ``LLMRequestError`` at once.
The budget, counters, observers and traces around each call: ``agent.llm_metering``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import httpx2
import openai
from openai._vendor.httpx_aiohttp import AiohttpTransport
from openai.types.audio import Transcription

from agent._failover import Endpoint, Failover, Transient, cause, host_of, retry_after
from agent.caching import caching_enabled, without_cache_control
from agent.errors import LLMRequestError, LLMUnavailable
from agent.llm_answer import LLMResponse as LLMResponse
from agent.llm_answer import ToolCallRequest as ToolCallRequest
from agent.llm_answer import Usage as Usage
from agent.llm_answer import add_call, usage_of
from agent.llm_answer import parse_arguments as parse_arguments
from agent.llm_http import ConnectErrors, session_maker
from agent.llm_metering import CallObserver as CallObserver
from agent.llm_metering import DeltaCallback as DeltaCallback
from agent.llm_metering import FailoverObserver as FailoverObserver
from agent.llm_metering import MeteredCalls
from agent.llm_request import CHAT_PATH, chat_request
from agent.llm_stream import error_message, stream_chunks
from agent.llm_warm import Preconnect
from agent.messages import ChatMessage
from agent.settings import FallbackEndpoint, LLMSettings
from agent.speech import SPEECH_FORMAT
from agent.usage import UsageMeter
from memory.embeddings import EmbeddingsError, EmbeddingsUnsupported

logger = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

DRAIN_SECONDS = 2.0
"""How long the end of a streamed body may take after ``[DONE]`` before it is dropped."""

PLACEHOLDER_API_KEY = "not-needed"
"""Sent when no key is configured: local OpenAI-compatible servers ignore it."""


class LLMClient(MeteredCalls):
    """Chat completions against any OpenAI-compatible endpoint (metered: ``agent.llm_metering``)."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Sleep = asyncio.sleep,
        observers: Sequence[CallObserver] = (),
        meter: UsageMeter | None = None,
        now: Callable[[], float] = time.monotonic,
        failovers: Sequence[FailoverObserver] = (),
        counters: Sequence[Callable[[str, str], None]] = (),
    ) -> None:
        """``now``: the monotonic clock a rate limit's reset is measured on;
        ``failovers``: told each time a call moves on to a fallback endpoint."""
        self.settings = settings
        self.meter = meter
        """Reserves, settles and records every charged call (the gateway's ledger and budgets)."""
        self.observers: tuple[CallObserver, ...] = tuple(observers)
        """Told the seconds and outcome of every call (the gateway's metrics)."""
        self.counters: tuple[Callable[[str, str], None], ...] = tuple(counters)
        """Told the model and outcome (``ok``, ``unavailable``, …) of every call."""
        self._client = _client(settings.base_url, settings.api_key, settings.timeout_seconds)
        self.preconnect = Preconnect(self._ahead, now)
        """Opens a connection to the primary endpoint ahead of a turn (``warm()``)."""
        self._fallbacks: list[tuple[FallbackEndpoint, openai.AsyncOpenAI]] = [
            (f, _client(f.base_url, f.api_key, f.timeout_seconds or settings.timeout_seconds))
            for f in settings.fallbacks
        ]
        endpoints = [Endpoint(host_of(settings.base_url), None)]
        endpoints += [Endpoint(host_of(f.base_url), f.model) for f, _ in self._fallbacks]
        if self._fallbacks and settings.timeout_seconds >= settings.turn_timeout_seconds:
            logger.warning(
                "llm.timeout_seconds (%g) is not shorter than llm.turn_timeout_seconds (%g): "
                "a hung primary uses up the turn before llm.fallbacks are asked",
                settings.timeout_seconds,
                settings.turn_timeout_seconds,
            )
        self.failovers: tuple[FailoverObserver, ...] = tuple(failovers)
        self.failover = Failover(
            endpoints, retries=settings.max_retries, sleep=sleep, now=now, on_failover=self._moved
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
        await self.preconnect.aclose()
        await self._client.close()
        for _, client in self._fallbacks:
            await client.close()

    async def _ahead(self) -> None:
        """A request of no cost to the primary endpoint: its base URL (404 on OpenAI)."""
        with contextlib.suppress(openai.APIStatusError):  # any answer leaves the connection
            await self._client.get("/", cast_to=httpx2.Response)

    async def _transcription(self, audio: bytes, filename: str, model: str) -> Transcription:
        try:
            return await self._client.audio.transcriptions.create(
                model=model, file=(filename, audio), response_format="json"
            )
        except openai.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                raise LLMUnavailable(f"transcription: HTTP {exc.status_code}") from exc
            raise LLMRequestError(f"transcription: HTTP {exc.status_code}") from exc
        except openai.APIError as exc:  # connection refused or dropped, timeout
            raise LLMUnavailable(f"transcription: {type(exc).__name__}") from exc

    async def _speech(self, text: str, model: str, voice: str) -> bytes:
        try:
            response = await self._client.audio.speech.create(
                model=model, voice=voice, input=text, response_format=SPEECH_FORMAT
            )
            return response.content
        except openai.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                raise LLMUnavailable(f"speech: HTTP {exc.status_code}") from exc
            raise LLMRequestError(f"speech: HTTP {exc.status_code}") from exc
        except openai.APIError as exc:  # connection refused or dropped, timeout
            raise LLMUnavailable(f"speech: {type(exc).__name__}") from exc

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

    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        model: str | None,
        on_delta: DeltaCallback | None,
    ) -> LLMResponse:
        asked = model or self.model

        async def attempt(index: int, live: bool) -> LLMResponse:
            client, name = self._client, asked
            sent = messages
            if index:
                fallback, client = self._fallbacks[index - 1]
                name = fallback.model
                if not caching_enabled(self.settings.prompt_caching, name):
                    sent = without_cache_control(messages)
            streamed = [False]
            shown = on_delta if live else None
            try:
                response = await self._stream_once(client, sent, tools, name, shown, streamed)
            except (openai.APIConnectionError, OSError) as exc:
                raise Transient(cause(exc), streamed=streamed[0]) from exc
            except openai.APIStatusError as exc:
                if exc.status_code != 429 and exc.status_code < 500:
                    logger.error("LLM endpoint refused the request: HTTP %s", exc.status_code)
                    raise LLMRequestError(
                        f"LLM endpoint refused the request: HTTP {exc.status_code}: {exc.message}"
                    ) from exc
                wait = retry_after(exc.response)
                failure = Transient(f"HTTP {exc.status_code}", wait=wait, streamed=streamed[0])
                failure.rate_limited = exc.status_code == 429
                raise failure from exc
            except openai.APIError as exc:  # an error event inside the stream
                reason = f"stream error ({type(exc).__name__})"
                raise Transient(reason, streamed=streamed[0]) from exc
            response.model = name
            return response

        response, _ = await self.failover.run(attempt, asked)
        return response

    async def _stream_once(
        self,
        client: openai.AsyncOpenAI,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        model: str,
        on_delta: DeltaCallback | None,
        streamed: list[bool],
    ) -> LLMResponse:
        body = chat_request(model, messages, tools)
        if client is self._client:
            self.preconnect.used()
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        response = LLMResponse(content="", usage_estimated=True)
        async with _posted(client, body) as raw:

            def failed(error: Any) -> Exception:
                return openai.APIError(error_message(error), raw.request, body=error)

            lines = _transport_errors(raw.aiter_lines(), raw.request)
            async for chunk in stream_chunks(lines, failed):
                if chunk.get("usage"):
                    response.usage = usage_of(chunk["usage"])
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
                        add_call(calls, tc)
            await _read_to_the_end(lines)
        response.content = "".join(text)
        response.tool_calls = [
            ToolCallRequest(
                id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["arguments"]
            )
            for index, slot in sorted(calls.items())
        ]
        return response


@contextlib.asynccontextmanager
async def _posted(client: openai.AsyncOpenAI, body: bytes) -> AsyncIterator[httpx2.Response]:
    """The streamed response to ``body`` posted to the chat completions of ``client``'s
    endpoint, closed when the block ends. The client sends it (auth, its headers, the
    timeout) and raises as ``create`` does on an error status (``APIStatusError``) or a
    failed connection (``APIConnectionError``); the body is not read before the block."""
    response = await client.post(
        CHAT_PATH,
        cast_to=httpx2.Response,
        content=body,
        options={"headers": {"Content-Type": "application/json"}},
        stream=True,
        stream_cls=None,
    )
    try:
        yield response
    finally:
        await response.aclose()


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


def _client(base_url: str | None, key: Any, timeout: float) -> openai.AsyncOpenAI:
    """A client of one endpoint; retries are ours (they must stop once text was streamed)."""
    secret = key.get_secret_value() if key is not None else PLACEHOLDER_API_KEY
    return openai.AsyncOpenAI(
        api_key=secret or PLACEHOLDER_API_KEY,
        base_url=base_url,
        timeout=timeout,
        max_retries=0,
        http_client=_HttpClient(timeout=timeout),
    )


class _HttpClient(openai.DefaultAioHttpClient):
    """The SDK's aiohttp client (``agent.llm_http``), its transports made as the SDK
    makes its own, with chorus's trace and connection errors (a transport given by
    the caller is used as it is)."""

    def _init_transport(  # type: ignore[override]
        self, transport: httpx2.AsyncBaseTransport | None = None, **settings: Any
    ) -> httpx2.AsyncBaseTransport:
        return transport if transport is not None else _transport(settings)

    def _init_proxy_transport(  # type: ignore[override]
        self, proxy: httpx2.Proxy, **settings: Any
    ) -> httpx2.AsyncBaseTransport:
        return _transport(settings, proxy)


def _transport(
    settings: dict[str, Any], proxy: httpx2.Proxy | None = None
) -> httpx2.AsyncBaseTransport:
    names = ("verify", "cert", "trust_env", "http1", "http2", "limits")
    sdk = AiohttpTransport(proxy=proxy, **{n: settings[n] for n in names if n in settings})
    sdk.client = session_maker(sdk.limits, sdk.ssl_context, sdk.local_address)
    return ConnectErrors(sdk)


async def _call(callback: DeltaCallback, text: str) -> None:
    result = callback(text)
    if inspect.isawaitable(result):
        await result


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

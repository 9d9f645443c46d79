"""A local fake of the OpenAI chat completions and embeddings HTTP API.

``FakeOpenAI`` runs an aiohttp server on 127.0.0.1 in a background thread with its
own event loop, so it can be used from both sync and async tests. Point a real
``openai.OpenAI`` / ``openai.AsyncOpenAI`` client at ``server.base_url``.

Replies are scripted through a FIFO queue: every chat completion request pops
exactly one ``Reply``. When the queue is empty the optional responder is asked,
and failing that the server answers with ``default_reply``.

    with FakeOpenAI() as server:
        server.reply("hello")
        server.tool_call("get_weather", {"city": "Paris"})
        server.error(429, "slow down")
        client = openai.OpenAI(base_url=server.base_url, api_key="test")

``POST /v1/embeddings`` answers every input with a deterministic vector
(:func:`embed_text`: a hashed bag of words, L2-normalised, with the words of
``synonyms`` counted as the word they stand for), so texts that share words,
or words a test declared synonyms, are close; its size is the request's ``dimensions`` or
``embedding_dimensions`` (1536, like ``text-embedding-3-small``), and it honours
``encoding_format`` (``float`` or ``base64``). ``embedding_error`` queues
failures for the embeddings route alone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, Literal

from aiohttp import web

from .loop_thread import LoopThread
from .openai_audio import TranscriptionRequest, transcriptions
from .openai_speech import SpeechRequest, speech

ReplyKind = Literal["text", "tool_calls", "error", "hang"]

_ERROR_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"),
    409: ("invalid_request_error", "conflict"),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", "service_unavailable"),
}


@dataclass(frozen=True)
class ToolCall:
    """One function call the assistant asks for. ``arguments`` is sent verbatim."""

    name: str
    arguments: str
    id: str | None = None


@dataclass
class Reply:
    """One scripted answer to one chat completion request.

    kind:
      * ``text``: assistant message ``text``.
      * ``tool_calls``: ``tool_calls`` (optionally with assistant ``text`` too).
      * ``error``: HTTP ``status`` with an OpenAI-style JSON error body.
      * ``hang``: wait ``delay`` seconds, then answer as if the queue were empty.

    ``delay`` applies to every kind: the server sleeps that long before answering.
    """

    kind: ReplyKind
    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    status: int = 200
    message: str = ""
    error_type: str | None = None
    error_code: str | None = None
    retry_after: float | None = None
    stall_after: int | None = None
    """Stream this many pieces of the text, then stall for ``stall`` seconds (a stuck answer)."""
    stall: float = 0.0
    error_after: int | None = None
    """Stream this many chunks, then an event carrying ``error`` instead of the rest."""
    drop_after: int | None = None
    """Stream this many chunks, then close the connection mid-body (no end of the chunked
    body, no ``[DONE]``): a proxy or server dying mid-answer."""
    retry_header: str = "retry-after-ms"
    """How ``retry_after`` is sent: ``retry-after-ms``, ``retry-after`` (seconds) or
    ``retry-after-date`` (a ``Retry-After`` HTTP date)."""
    delay: float = 0.0

    @classmethod
    def of_text(
        cls,
        text: str,
        *,
        usage: dict[str, Any] | None = None,
        finish_reason: str | None = None,
        delay: float = 0.0,
        stall_after: int | None = None,
        stall: float = 0.0,
        error_after: int | None = None,
        drop_after: int | None = None,
    ) -> Reply:
        return cls(
            "text",
            text=text,
            usage=usage,
            finish_reason=finish_reason,
            delay=delay,
            stall_after=stall_after,
            stall=stall,
            error_after=error_after,
            drop_after=drop_after,
        )

    @classmethod
    def of_tool_calls(
        cls,
        calls: list[tuple[str, dict[str, Any] | str]] | list[ToolCall],
        *,
        text: str | None = None,
        usage: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> Reply:
        built = [c if isinstance(c, ToolCall) else _tool_call(c[0], c[1]) for c in calls]
        return cls("tool_calls", text=text, tool_calls=built, usage=usage, delay=delay)

    @classmethod
    def of_error(
        cls,
        status: int,
        message: str = "The server had an error while processing your request.",
        *,
        error_type: str | None = None,
        code: str | None = None,
        retry_after: float | None = 0.01,
        retry_header: str = "retry-after-ms",
    ) -> Reply:
        return cls(
            "error",
            status=status,
            message=message,
            error_type=error_type,
            error_code=code,
            retry_after=retry_after,
            retry_header=retry_header,
        )

    @classmethod
    def of_hang(cls, seconds: float) -> Reply:
        return cls("hang", delay=seconds)


def _tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> ToolCall:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(name=name, arguments=args, id=call_id)


def _estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4) if text else 0


def _split_words(text: str) -> list[str]:
    """Split text into word-sized pieces that concatenate back to ``text``."""
    pieces = re.findall(r"\s*\S+", text)
    rest = text[len("".join(pieces)) :]
    if rest:
        if pieces:
            pieces[-1] += rest
        else:
            pieces.append(rest)
    return pieces


def _split_fixed(text: str, size: int) -> list[str]:
    if not text:
        return [""]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _build_usage(
    override: dict[str, Any] | None, prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    """Full usage object; ``override`` may set any top-level or detail field.

    ``cached_tokens`` and ``reasoning_tokens`` are also accepted at the top level.
    """
    override = dict(override or {})
    cached = override.pop("cached_tokens", 0)
    reasoning = override.pop("reasoning_tokens", 0)
    prompt_details = {"cached_tokens": cached, "audio_tokens": 0}
    prompt_details.update(override.pop("prompt_tokens_details", None) or {})
    completion_details = {
        "reasoning_tokens": reasoning,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    }
    completion_details.update(override.pop("completion_tokens_details", None) or {})
    prompt = override.pop("prompt_tokens", prompt_tokens)
    completion = override.pop("completion_tokens", completion_tokens)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": override.pop("total_tokens", prompt + completion),
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": completion_details,
    }
    usage.update(override)
    return usage


def _error_body(
    status: int,
    message: str,
    error_type: str | None = None,
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    default_type, default_code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {
        "error": {
            "message": message,
            "type": error_type or default_type,
            "param": param,
            "code": code if code is not None else default_code,
        }
    }


_STOPWORDS = """
a an and are as at be do does for from has have i in is it me my of on or
our the their them they this to user was we what when where which who you your
"""
EMBEDDING_STOPWORDS = frozenset(_STOPWORDS.split())
"""Words :func:`embed_text` ignores, so a question and the fact it asks about are close."""


def embedding_tokens(text: str, synonyms: dict[str, str] | None = None) -> list[str]:
    """The words of ``text`` that :func:`embed_text` counts: lower-cased, a plural ``s`` cut,
    then each replaced by its entry in ``synonyms`` (word → the word it stands for)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    stems = [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words
    ]
    table = synonyms or {}
    return [table.get(w, w) for w in stems if w not in EMBEDDING_STOPWORDS]


def embed_text(text: str, dimensions: int, synonyms: dict[str, str] | None = None) -> list[float]:
    """A deterministic unit vector for ``text``: each word adds ±1 at a hashed position.

    Words that ``synonyms`` maps to the same word land on the same position, so
    a test decides which words mean the same thing.
    """
    vector = [0.0] * dimensions
    for token in embedding_tokens(text, synonyms):
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "big") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def _embedding_inputs(raw: Any) -> list[str] | None:
    """The texts of an embeddings ``input``: a string, a list of strings, or token lists."""
    if isinstance(raw, str):
        return [raw]
    if not isinstance(raw, list) or not raw:
        return None
    if all(isinstance(item, str) for item in raw):
        return list(raw)
    if all(isinstance(item, int) and not isinstance(item, bool) for item in raw):
        return [" ".join(f"t{item}" for item in raw)]
    if all(isinstance(item, list) and all(isinstance(t, int) for t in item) for item in raw):
        return [" ".join(f"t{t}" for t in item) for item in raw]
    return None


def _encode_embedding(vector: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return vector


class FakeOpenAI(LoopThread):
    thread_name = "fake-openai"

    """Fake OpenAI-compatible server; see the module docstring."""

    #: characters per streamed tool-call ``arguments`` fragment
    stream_argument_chars = 8
    #: seconds between two streamed pieces of text (0: all at once)
    stream_piece_delay = 0.0

    def __init__(
        self,
        *,
        default_reply: str = "ok",
        model: str = "fake-model",
        api_key: str | None = None,
    ) -> None:
        super().__init__()
        self.default_reply = default_reply
        self.model = model
        #: when set, requests must send ``Authorization: Bearer <api_key>`` (401 otherwise)
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        #: bodies of ``/v1/embeddings`` requests, in order
        self.embedding_requests: list[dict[str, Any]] = []
        #: vector size when a request names no ``dimensions``
        self.embedding_dimensions = 1536
        #: word → the word it means, for :func:`embed_text` (set by a test)
        self.synonyms: dict[str, str] = {}
        #: False: ``/v1/embeddings`` answers 404 like an endpoint that has no such route
        self.offers_embeddings = True
        #: requests to ``/v1/embeddings``, answered or not
        self.embedding_calls = 0
        self.in_flight = 0
        self.in_flight_max = 0
        #: False: no ``usage`` even when ``stream_options.include_usage`` asks for it (as
        #: some OpenAI-compatible servers answer), and none in transcriptions
        self.reports_usage = True
        self.connections: list[tuple[str, int]] = []
        """The client address of each chat request (one per TCP connection it came on)."""
        self.unknown: list[tuple[str, str, tuple[str, int], str | None]] = []
        """Method, path, client address and ``Authorization`` header of each request to no
        route of the API (answered 404 ``Invalid URL`` as OpenAI does)."""
        #: audio bytes → what ``/v1/audio/transcriptions`` hears in them (see ``openai_audio``)
        self.transcripts: dict[bytes, str] = {}
        self.default_transcript = "hello"
        self.transcription_requests: list[TranscriptionRequest] = []
        self._transcription_failures: deque[int] = deque()
        #: how long every audio file lasts, to ``/v1/audio/transcriptions`` (its ``usage``)
        self.transcription_seconds = 1.0
        #: the ``usage`` every transcription reports instead of one from the model's billing
        self.transcription_usage: dict[str, Any] | None = None
        #: ``/v1/audio/speech`` requests, answered or not (see ``openai_speech``)
        self.speech_requests: list[SpeechRequest] = []
        self._speech_failures: deque[int] = deque()
        self.base_url = ""
        self._queue: deque[Reply] = deque()
        self._embedding_queue: deque[Reply] = deque()
        self._responder: Callable[[dict[str, Any]], Reply | str] | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping: asyncio.Event | None = None

    # ------------------------------------------------------------------ lifecycle

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/audio/speech", self._speech)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    async def _shutdown(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        await super()._shutdown()

    # ------------------------------------------------------------------ scripting

    def push(self, *replies: Reply) -> None:
        """Queue ready-made replies."""
        with self._lock:
            self._queue.extend(replies)

    def reply(
        self,
        text: str,
        *,
        usage: dict[str, Any] | None = None,
        finish_reason: str | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue an assistant text answer."""
        self.push(Reply.of_text(text, usage=usage, finish_reason=finish_reason, delay=delay))

    def tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        call_id: str | None = None,
        text: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        """Queue one function call; a str ``arguments`` is sent verbatim."""
        call = _tool_call(name, arguments, call_id)
        self.push(Reply("tool_calls", text=text, tool_calls=[call], usage=usage))

    def tool_calls(
        self,
        calls: list[tuple[str, dict[str, Any] | str]],
        *,
        text: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        """Queue several function calls in one answer."""
        self.push(Reply.of_tool_calls(calls, text=text, usage=usage))

    def error(
        self,
        status: int,
        message: str = "The server had an error while processing your request.",
        *,
        times: int = 1,
        error_type: str | None = None,
        code: str | None = None,
        retry_after: float | None = 0.01,
        retry_header: str = "retry-after-ms",
    ) -> None:
        """Queue ``times`` HTTP errors.

        ``retry_after`` (seconds) is sent as ``retry_header`` (``retry-after-ms`` by
        default, so client retries are quick); ``None`` leaves the header out.
        """
        reply = Reply.of_error(
            status,
            message,
            error_type=error_type,
            code=code,
            retry_after=retry_after,
            retry_header=retry_header,
        )
        self.push(*(replace(reply) for _ in range(times)))

    def hang(self, seconds: float) -> None:
        """Queue a request that waits ``seconds`` before answering normally."""
        self.push(Reply.of_hang(seconds))

    def embedding_error(
        self,
        status: int,
        message: str = "The server had an error while processing your request.",
        *,
        times: int = 1,
        retry_after: float | None = 0.01,
    ) -> None:
        """Queue ``times`` HTTP errors for ``/v1/embeddings`` (chat replies are not affected)."""
        reply = Reply.of_error(status, message, retry_after=retry_after)
        with self._lock:
            self._embedding_queue.extend(replace(reply) for _ in range(times))

    def clear_embedding_errors(self) -> None:
        """Drop the embedding errors not consumed yet."""
        with self._lock:
            self._embedding_queue.clear()

    def transcription_error(self, status: int, *, times: int = 1) -> None:
        """The next ``times`` transcription requests get HTTP ``status``."""
        with self._lock:
            self._transcription_failures.extend([status] * times)

    def speech_error(self, status: int, *, times: int = 1) -> None:
        """The next ``times`` speech requests get HTTP ``status``."""
        with self._lock:
            self._speech_failures.extend([status] * times)

    def responder(self, fn: Callable[[dict[str, Any]], Reply | str] | None) -> None:
        """Compute replies from the request body when the queue is empty (str = text)."""
        self._responder = fn

    @property
    def pending(self) -> int:
        """Number of scripted replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget scripted replies, the responder, recorded requests and counters."""
        with self._lock:
            self._queue.clear()
            self._embedding_queue.clear()
            self._responder = None
            self.requests.clear()
            self.embedding_requests.clear()
            self.transcription_requests.clear()
            self._transcription_failures.clear()
            self.transcription_seconds = 1.0
            self.transcription_usage = None
            self.speech_requests.clear()
            self._speech_failures.clear()
            self.in_flight_max = 0
            self.connections.clear()
            self.unknown.clear()
            self.reports_usage = True

    @property
    def last_request(self) -> dict[str, Any]:
        return self.requests[-1]

    # ------------------------------------------------------------------ handlers

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def _fallback(self, body: dict[str, Any]) -> Reply:
        responder = self._responder
        if responder is not None:
            result = responder(body)
            return Reply.of_text(result) if isinstance(result, str) else result
        return Reply.of_text(self.default_reply)

    async def _sleep(self, seconds: float) -> None:
        if seconds <= 0 or self._stopping is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)

    def _headers(self) -> dict[str, str]:
        return {"x-request-id": f"req_{next(self._ids):08d}", "openai-processing-ms": "1"}

    def _json_error(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
        retry_header: str = "retry-after-ms",
    ) -> web.Response:
        headers = self._headers()
        if retry_after is not None:
            if retry_header == "retry-after-ms":
                headers["retry-after-ms"] = str(max(1, round(retry_after * 1000)))
            elif retry_header == "retry-after":
                headers["Retry-After"] = f"{retry_after:g}"
            else:
                when = datetime.now(UTC) + timedelta(seconds=retry_after)
                headers["Retry-After"] = format_datetime(when, usegmt=True)
        return web.json_response(
            _error_body(status, message, error_type, code, param), status=status, headers=headers
        )

    async def _models(self, request: web.Request) -> web.Response:
        denied = self._check_auth(request)
        if denied is not None:
            return denied
        model = {"id": self.model, "object": "model", "created": 0, "owned_by": "system"}
        return web.json_response({"object": "list", "data": [model]}, headers=self._headers())

    async def _embeddings(self, request: web.Request) -> web.Response:
        with self._lock:
            self.embedding_calls += 1
        if not self.offers_embeddings:
            return await self._not_found(request)
        denied = self._check_auth(request)
        if denied is not None:
            return denied
        try:
            body = await request.json()
        except ValueError:
            return self._json_error(400, "We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return self._json_error(400, "The request body must be a JSON object.")
        self.embedding_requests.append(body)
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return self._json_error(400, "you must provide a model parameter", param="model")
        texts = _embedding_inputs(body.get("input"))
        if texts is None:
            return self._json_error(400, "'input' must be a string or an array", param="input")
        dimensions = body.get("dimensions", self.embedding_dimensions)
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            return self._json_error(
                400, "'dimensions' must be a positive integer", param="dimensions"
            )
        encoding_format = body.get("encoding_format", "float")
        if encoding_format not in ("float", "base64"):
            return self._json_error(
                400, "'encoding_format' must be 'float' or 'base64'", param="encoding_format"
            )
        with self._lock:
            failure = self._embedding_queue.popleft() if self._embedding_queue else None
        if failure is not None:
            return self._json_error(
                failure.status, failure.message, retry_after=failure.retry_after
            )
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": _encode_embedding(
                    embed_text(text, dimensions, self.synonyms), encoding_format
                ),
            }
            for index, text in enumerate(texts)
        ]
        tokens = sum(_estimate_tokens(text) for text in texts)
        payload = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return web.json_response(payload, headers=self._headers())

    async def _transcriptions(self, request: web.Request) -> web.Response:
        return await transcriptions(self, request)

    async def _speech(self, request: web.Request) -> web.Response:
        return await speech(self, request)

    async def _not_found(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer:
            auth = request.headers.get("Authorization")
            self.unknown.append((request.method, request.path, (str(peer[0]), int(peer[1])), auth))
        return self._json_error(
            404, f"Invalid URL ({request.method} {request.path})", code="unknown_url"
        )

    def _check_auth(self, request: web.Request) -> web.Response | None:
        if self.api_key is None:
            return None
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return self._json_error(401, "Incorrect API key provided.", code="invalid_api_key")

    def _validate(self, body: Any) -> web.Response | None:
        if not isinstance(body, dict):
            return self._json_error(400, "The request body must be a JSON object.")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return self._json_error(400, "you must provide a model parameter", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return self._json_error(
                400,
                "Missing required parameter: 'messages'."
                if messages is None
                else "Invalid 'messages': expected a non-empty array.",
                param="messages",
                code="missing_required_parameter" if messages is None else "invalid_value",
            )
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                return self._json_error(
                    400,
                    f"Missing required parameter: 'messages[{i}].role'.",
                    param=f"messages[{i}].role",
                    code="missing_required_parameter",
                )
        return None

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer:
            self.connections.append((str(peer[0]), int(peer[1])))
        self.in_flight += 1
        self.in_flight_max = max(self.in_flight_max, self.in_flight)
        try:
            return await self._handle_chat(request)
        finally:
            self.in_flight -= 1

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        denied = self._check_auth(request)
        if denied is not None:
            return denied
        try:
            body = await request.json()
        except ValueError:
            return self._json_error(400, "We could not parse the JSON body of your request.")
        if isinstance(body, dict):
            self.requests.append(body)
        invalid = self._validate(body)
        if invalid is not None:
            return invalid

        reply = self._next_reply() or self._fallback(body)
        await self._sleep(reply.delay)
        if reply.kind == "hang":
            reply = self._fallback(body)
            await self._sleep(reply.delay)
        if reply.kind == "error":
            return self._json_error(
                reply.status,
                reply.message,
                error_type=reply.error_type,
                code=reply.error_code,
                retry_after=reply.retry_after,
                retry_header=reply.retry_header,
            )
        if reply.kind == "hang":  # a responder asked to hang: answer with the default
            reply = Reply.of_text(self.default_reply)

        calls = [
            ToolCall(c.name, c.arguments, c.id or f"call_{next(self._ids):024d}")
            for c in reply.tool_calls
        ]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        completion_text = (reply.text or "") + "".join(c.name + c.arguments for c in calls)
        usage = _build_usage(
            reply.usage,
            prompt_tokens=_estimate_tokens(json.dumps(body["messages"])),
            completion_tokens=_estimate_tokens(completion_text),
        )
        completion_id = f"chatcmpl-fake{next(self._ids):012d}"
        common = {
            "id": completion_id,
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "fp_fake",
            "service_tier": "default",
        }
        if body.get("stream"):
            options = body.get("stream_options") or {}
            include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
            include_usage = include_usage and self.reports_usage
            return await self._stream(
                request,
                common,
                reply.text,
                calls,
                finish,
                usage if include_usage else None,
                reply,
            )

        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text,
            "refusal": None,
            "annotations": [],
        }
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ]
        payload = {
            **common,
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": usage,
        }
        return web.json_response(payload, headers=self._headers())

    async def _stream(
        self,
        request: web.Request,
        common: dict[str, Any],
        text: str | None,
        calls: list[ToolCall],
        finish: str,
        usage: dict[str, Any] | None,
        reply: Reply,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            status=200,
            headers={
                **self._headers(),
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            },
        )
        await response.prepare(request)
        try:
            written = 0
            async for chunk in self._chunks(common, text, calls, finish, usage, reply):
                if reply.error_after is not None and written == reply.error_after:
                    failure = {"message": "The server had an error", "type": "server_error"}
                    error = {"error": failure}
                    await response.write(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
                    await response.write_eof()
                    return response
                if reply.drop_after is not None and written == reply.drop_after:
                    if request.transport is not None:
                        request.transport.abort()  # the body ends without its last chunk
                    return response
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                written += 1
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionError:
            pass
        return response

    async def _chunks(
        self,
        common: dict[str, Any],
        text: str | None,
        calls: list[ToolCall],
        finish: str,
        usage: dict[str, Any] | None,
        reply: Reply,
    ) -> AsyncIterator[dict[str, Any]]:
        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            data: dict[str, Any] = {
                **common,
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": delta,
                        "logprobs": None,
                        "finish_reason": finish_reason,
                    }
                ],
            }
            if usage is not None:
                data["usage"] = None
            return data

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for number, piece in enumerate(_split_words(text or "")):
            if reply.stall_after is not None and number == reply.stall_after:
                await asyncio.sleep(reply.stall)
            if self.stream_piece_delay:
                await asyncio.sleep(self.stream_piece_delay)
            yield chunk({"content": piece})
        for index, call in enumerate(calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            for fragment in _split_fixed(call.arguments, self.stream_argument_chars):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        yield chunk({}, finish)
        if usage is not None:
            yield {**common, "object": "chat.completion.chunk", "choices": [], "usage": usage}

"""The bookkeeping around every call ``agent.llm.LLMClient`` makes: with a ``charge``
and a meter, an estimate is reserved before the call (``BudgetExhausted`` when the
person's budget is spent, no request made) and the usage settled after (or the hold
released when the call failed); the counters and observers are told each call's
model, outcome and duration; a chat completion is traced. The calls themselves (the
wire, through ``openai``) are ``LLMClient``'s own.

``MeteredCalls`` is a part of ``agent.llm.LLMClient`` (its base class).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent.errors import LLMError
from agent.llm_answer import LLMResponse, Usage
from agent.messages import ChatMessage
from agent.speech import speech_usage
from agent.tracing.spans import call_outcome, llm_call_done, llm_call_failed, llm_call_span
from agent.transcription import expected_tokens, transcription_usage
from agent.usage import OUTPUT_ALLOWANCE, Charge, UsageMeter, estimate_text, estimate_tokens

__all__ = ["CallObserver", "DeltaCallback", "FailoverObserver", "MeteredCalls"]

logger = logging.getLogger("agent.llm")  # logged as the client's own lines

_T = TypeVar("_T")

DeltaCallback = Callable[[str], Awaitable[None] | None]
CallObserver = Callable[[float, bool], None]
"""Told the duration of every ``complete()`` and whether it failed (for metrics)."""
FailoverObserver = Callable[[str], None]
"""Told the model of the endpoint a call moves on to (for metrics)."""


class Transcribed(Protocol):
    """What the endpoint answered to a transcription: its text, and its usage if any."""

    @property
    def text(self) -> str: ...

    @property
    def usage(self) -> Any: ...


class MeteredCalls:
    """The metered, counted and observed calls of one LLM client."""

    meter: UsageMeter | None
    observers: tuple[CallObserver, ...]
    counters: tuple[Callable[[str, str], None], ...]
    failovers: tuple[FailoverObserver, ...]

    if TYPE_CHECKING:  # the client's own, used here

        @property
        def model(self) -> str: ...

        async def _transcription(self, audio: bytes, filename: str, model: str) -> Transcribed: ...

        async def _speech(self, text: str, model: str, voice: str) -> bytes: ...

        async def _complete(
            self,
            messages: Sequence[ChatMessage],
            tools: Sequence[dict[str, Any]] | None,
            model: str | None,
            on_delta: DeltaCallback | None,
        ) -> LLMResponse: ...

    async def transcribe(
        self,
        audio: bytes,
        *,
        filename: str,
        model: str,
        charge: Charge | None = None,
        seconds: float | None = None,
    ) -> str:
        """The words spoken in ``audio`` (``/v1/audio/transcriptions``; the endpoint knows
        the format by ``filename``'s extension). ``LLMUnavailable`` when the endpoint is
        unreachable or overloaded, ``LLMRequestError`` when it refuses the file.

        With a ``charge`` and a meter, like ``complete()``: an estimate is reserved first
        (``BudgetExhausted`` when the person's budget is spent, no request made) and the
        usage the endpoint reported (``agent.transcription``) is settled after.
        ``seconds``: the audio's length, when the platform said (for the estimates)."""
        result = await self._audio_call(
            model,
            charge,
            expected_tokens(len(audio), seconds),
            lambda: self._transcription(audio, filename, model),
            lambda done: transcription_usage(done.usage, done.text, seconds),
        )
        return result.text

    async def speak(
        self, text: str, *, model: str, voice: str, charge: Charge | None = None
    ) -> bytes:
        """``text`` read out (``/v1/audio/speech``) as OGG/Opus audio. Errors as
        ``transcribe``'s; with a ``charge`` and a meter it is reserved and settled like it,
        with the estimate of ``agent.speech`` (the endpoint reports no usage)."""
        usage = speech_usage(text)
        return await self._audio_call(
            model,
            charge,
            usage[0] + usage[2],
            lambda: self._speech(text, model, voice),
            lambda _: (usage, True),
        )

    async def _audio_call(
        self,
        model: str,
        charge: Charge | None,
        estimate: int,
        call: Callable[[], Awaitable[_T]],
        usage_of: Callable[[_T], tuple[tuple[int, int, int], bool]],
    ) -> _T:
        """``call`` counted, and with a ``charge`` and a meter reserved (``estimate``
        tokens) before and settled after (``usage_of`` its result: the usage, and
        whether it is an estimate), or released when it fails."""
        meter = self.meter if charge is not None else None
        hold: object = None
        if meter is not None and charge is not None:
            hold = await meter.reserve(charge, model, estimate)
        try:
            result = await call()
        except BaseException as exc:
            self._counted(model, call_outcome(exc))
            if meter is not None:
                await _quietly(meter.release(hold))
            raise
        self._counted(model, "ok")
        if meter is not None:
            usage, estimated = usage_of(result)
            await _quietly(meter.settle(hold, model, usage, estimated=estimated))
        return result

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
        name = response.model or name
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

    def _moved(self, model: str) -> None:
        for observer in self.failovers:
            observer(model)

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


async def _quietly(step: Awaitable[None]) -> None:
    """Run a meter's bookkeeping; its failure is logged, never the call's."""
    try:
        await step
    except Exception as exc:
        logger.warning("usage not recorded (%s: %s)", type(exc).__name__, exc)

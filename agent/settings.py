"""Settings the agent layer needs, declared here and composed by ``gateway.config``."""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr

from memory.settings import LIVE, NEW_SESSIONS, RESTART


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelPrice(_Section):
    """What one model costs, per million tokens (in the operator's currency)."""

    input: float = Field(ge=0)
    cached_input: float | None = Field(
        None, ge=0, description="Per million cached input tokens; None: as ``input``."
    )
    output: float = Field(ge=0)


class FallbackEndpoint(_Section):
    """One entry of ``llm.fallbacks``: another OpenAI-compatible endpoint and model.

    Its key is never written in the configuration: ``api_key_env`` names the
    environment variable (or ``CHORUS_HOME/.env`` entry) that holds it; the
    configuration loader checks that it is set and binds it (``bind_key``).
    """

    base_url: str | None = Field(None, description="None means the OpenAI API.")
    model: str = Field(min_length=1)
    api_key_env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The variable holding this endpoint's key; None: a local server "
        "that needs none.",
    )
    timeout_seconds: float | None = Field(None, gt=0, description="None: as llm.timeout_seconds.")
    _api_key: SecretStr | None = PrivateAttr(None)

    def bind_key(self, key: str | None) -> None:
        """Keep the key read from ``api_key_env`` at load time."""
        self._api_key = SecretStr(key) if key else None

    @property
    def api_key(self) -> SecretStr | None:
        """The bound key, else the variable's value now (settings built without the loader)."""
        if self._api_key is not None or self.api_key_env is None:
            return self._api_key
        value = os.environ.get(self.api_key_env)
        return SecretStr(value) if value else None


class LLMSettings(_Section):
    """The ``llm`` section: any OpenAI-compatible endpoint."""

    base_url: Annotated[str | None, RESTART] = Field(
        None, description="OPENAI_BASE_URL; None means the OpenAI API."
    )
    api_key: Annotated[SecretStr | None, RESTART] = Field(None, description="OPENAI_API_KEY.")
    model: Annotated[str, RESTART] = "gpt-4o-mini"
    auxiliary_model: Annotated[str | None, RESTART] = Field(
        None, description="Cheaper model for flush and summaries."
    )
    context_length: Annotated[int, RESTART] = Field(128_000, gt=0)
    timeout_seconds: Annotated[float, RESTART] = Field(120.0, gt=0)
    max_retries: Annotated[int, RESTART] = Field(3, ge=0)
    turn_timeout_seconds: Annotated[float, LIVE] = Field(
        90.0, gt=0, description="One deadline for a whole answer, retries and tools included."
    )
    fallbacks: Annotated[list[FallbackEndpoint], RESTART] = Field(
        default_factory=list,
        description="Other endpoints, in order, that answer when the one before fails "
        "before its first token (connection, timeout, 429, 5xx) or drops mid-answer.",
    )
    prompt_caching: Annotated[Literal["auto", "on", "off"], RESTART] = "auto"
    vision: Annotated[bool, RESTART] = False
    pricing: Annotated[dict[str, ModelPrice], LIVE] = Field(
        default_factory=dict,
        description="model name -> price per million input, cached input and output "
        "tokens; a model not listed counts tokens only.",
    )
    transcription_model: Annotated[str | None, LIVE] = Field(
        None,
        description="Model of the endpoint's /v1/audio/transcriptions for voice messages "
        "(whisper-1, gpt-4o-mini-transcribe…); unset: voice messages are not listened to.",
    )
    speech_model: Annotated[str | None, LIVE] = Field(
        None,
        description="Model of the endpoint's /v1/audio/speech for spoken replies (tts-1, "
        "gpt-4o-mini-tts…); unset: answers are text only and /voice says so.",
    )
    speech_voice: Annotated[str, LIVE] = Field(
        "alloy", min_length=1, description="The voice spoken replies are read in."
    )


class AgentSettings(_Section):
    """The ``agent`` section: the loop one person talks to."""

    max_iterations: Annotated[int, NEW_SESSIONS] = Field(20, gt=0)
    persona: Annotated[str | None, NEW_SESSIONS] = Field(
        None, description="Replaces the default identity text."
    )


TAIL_SHARE = 0.4
"""The share of the compression threshold kept verbatim at the tail, unless set."""


class CompressionSettings(_Section):
    """The ``compression`` section: when and how history is summarised."""

    enabled: Annotated[bool, NEW_SESSIONS] = True
    threshold: Annotated[float, NEW_SESSIONS] = Field(0.5, gt=0, le=1)
    protect_first: Annotated[int, NEW_SESSIONS] = Field(3, ge=0)
    tail_token_budget: Annotated[int | None, NEW_SESSIONS] = Field(
        None,
        gt=0,
        description="Tokens of the newest messages kept verbatim; None: "
        f"{TAIL_SHARE:.0%} of the threshold, so it scales with llm.context_length.",
    )

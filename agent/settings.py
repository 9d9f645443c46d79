"""Settings the agent layer needs, declared here and composed by ``gateway.config``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMSettings(_Section):
    """The ``llm`` section: any OpenAI-compatible endpoint."""

    base_url: str | None = Field(None, description="OPENAI_BASE_URL; None means the OpenAI API.")
    api_key: SecretStr | None = Field(None, description="OPENAI_API_KEY.")
    model: str = "gpt-4o-mini"
    auxiliary_model: str | None = Field(None, description="Cheaper model for flush and summaries.")
    context_length: int = Field(128_000, gt=0)
    timeout_seconds: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0)
    prompt_caching: Literal["auto", "on", "off"] = "auto"
    vision: bool = False


class AgentSettings(_Section):
    """The ``agent`` section: the loop one person talks to."""

    max_iterations: int = Field(20, gt=0)
    persona: str | None = Field(None, description="Replaces the default identity text.")


class CompressionSettings(_Section):
    """The ``compression`` section: when and how history is summarised."""

    enabled: bool = True
    threshold: float = Field(0.5, gt=0, le=1)
    protect_first: int = Field(3, ge=0)
    tail_token_budget: int = Field(8_000, gt=0)

"""The ``observability`` section: where traces go and what they may carry."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from memory.settings import RESTART


class ObservabilitySettings(BaseModel):
    """OpenTelemetry traces of every turn, off unless ``otlp_endpoint`` is set."""

    model_config = ConfigDict(extra="forbid")

    otlp_endpoint: Annotated[str | None, RESTART] = Field(
        None,
        description="OTLP/HTTP collector, e.g. http://collector:4318 (``/v1/traces`` is "
        "added); None: no tracing, the SDK is never imported.",
    )
    service_name: Annotated[str, RESTART] = Field(
        "chorus", min_length=1, description="``service.name`` of the exported spans."
    )
    include_content: Annotated[bool, RESTART] = Field(
        False, description="Message text and tool arguments in the spans (off: never)."
    )
    include_person_ids: Annotated[bool, RESTART] = Field(
        False,
        description="Platform user and chat ids in the spans; off: a keyed hash of the person.",
    )
    export_timeout_seconds: Annotated[float, RESTART] = Field(
        5.0, gt=0, le=60, description="How long one export to the collector may take."
    )

"""The OTLP/HTTP exporter, quiet when the collector is away: one WARNING when sending
starts to fail, one INFO when it works again. Spans are sent from the SDK's own
thread; a turn never waits for the collector."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["quiet_exporter"]

logger = logging.getLogger(__name__)

SDK_LOGGERS = ("opentelemetry.exporter.otlp", "opentelemetry.sdk.trace.export")
"""The SDK's own loggers, which would log every failed export and retry."""


class QuietExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self._inner = inner
        self._endpoint = endpoint
        self._failing = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        reason = "refused"
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # the SDK's thread must go on
            result, reason = SpanExportResult.FAILURE, type(exc).__name__
        if result is SpanExportResult.SUCCESS:
            if self._failing:
                logger.info("traces reach the collector at %s again", self._endpoint)
            self._failing = False
        elif not self._failing:
            self._failing = True
            logger.warning(
                "traces could not be sent to %s (%s); turns go on, spans are dropped until "
                "it answers",
                self._endpoint,
                reason,
            )
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def quiet_exporter(endpoint: str, timeout: float) -> SpanExporter:
    for name in SDK_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return QuietExporter(OTLPSpanExporter(endpoint=endpoint, timeout=timeout), endpoint)

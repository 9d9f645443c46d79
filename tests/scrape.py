"""Reading a Prometheus ``/metrics`` page the way Prometheus does (prometheus_client's parser)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of a Prometheus text exposition by (name, sorted labels)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    """The sample ``name{labels}``; KeyError when it is not exported."""
    return found[(name, tuple(sorted(labels.items())))]


def names(found: Samples) -> set[str]:
    return {name for name, _ in found}

"""What a call cost, from ``llm.pricing`` (prices per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping

from agent.settings import ModelPrice

__all__ = ["cost_of", "dearest"]

MILLION = 1_000_000


def cost_of(
    prices: Mapping[str, ModelPrice], model: str, input_tokens: int, cached: int, output: int
) -> float | None:
    """The cost of one call; None for a model without a price (tokens are counted only)."""
    price = prices.get(model)
    if price is None:
        return None
    cached = min(cached, input_tokens)
    cached_price = price.input if price.cached_input is None else price.cached_input
    return (
        (input_tokens - cached) * price.input + cached * cached_price + output * price.output
    ) / MILLION


def dearest(prices: Mapping[str, ModelPrice], model: str, tokens: int) -> float:
    """An upper bound of the cost of ``tokens`` of ``model`` (a reservation's estimate)."""
    price = prices.get(model)
    if price is None:
        return 0.0
    return tokens * max(price.input, price.output) / MILLION

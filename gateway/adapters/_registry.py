"""Every platform chorus speaks: one ``PlatformSpec`` each.

Adding a platform is its package under ``gateway/adapters/`` and one entry in
``PLATFORMS``; configuration, start-up, ``chorus doctor``, streaming and the
architecture tests all read this tuple.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from gateway.adapters import discord, slack, telegram
from gateway.adapters._base import BaseAdapter
from gateway.adapters._spec import PlatformContext, PlatformSpec

PLATFORMS: tuple[PlatformSpec[Any], ...] = (telegram.SPEC, discord.SPEC, slack.SPEC)


def platform_spec(name: str) -> PlatformSpec[Any] | None:
    """The spec of platform ``name``, or None (the console and in-memory platforms have none)."""
    return next((spec for spec in PLATFORMS if spec.name == name), None)


def enabled_adapters(
    section: Callable[[PlatformSpec[Any]], BaseModel], context: PlatformContext
) -> list[BaseAdapter]:
    """An adapter for every platform whose section enables it."""
    adapters: list[BaseAdapter] = []
    for spec in PLATFORMS:
        settings = section(spec)
        if spec.enabled(settings):
            adapters.append(spec.build(settings, context))
    return adapters


def enable_hints() -> str:
    """``A, B or C``: what enables each platform."""
    hints = [spec.enable_hint for spec in PLATFORMS]
    return ", ".join(hints[:-1]) + f" or {hints[-1]}" if len(hints) > 1 else "".join(hints)

"""``chorus memory setup [NAME]`` and ``chorus memory status``: configure and watch a provider.

Setup walks the provider's ``get_config_schema()``: every field is asked with
its current value or default (``--set KEY=VALUE`` answers it on the command
line, ``--no-input`` takes the defaults), secrets are asked hidden and written
to ``CHORUS_HOME/.env`` under their ``env_var``, everything else goes to
``config.yaml`` as ``memory.providers.<name>`` with ``memory.provider: <name>``.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from gateway.cli._common import fail, out, settings
from gateway.config import (
    Settings,
    database_location,
    secrets_environment,
    set_memory_provider,
    set_secret,
)
from gateway.errors import GatewayError
from memory.providers import MemoryProvider, ProviderHealth
from plugins.errors import PluginError
from plugins.memory import (
    coerce,
    config_fields,
    discover_memory_providers,
    load_memory_provider,
    resolve_config,
)

RESTART_NOTE = (
    "memory.provider takes effect when `chorus gateway` and every `chorus worker` "
    "restart; changed provider settings reach the sessions that start after that."
)


def _load(cfg: Settings, name: str) -> MemoryProvider:
    try:
        return load_memory_provider(name, cfg.home)
    except PluginError as exc:
        raise fail(str(exc)) from None


def _answers(pairs: list[str]) -> dict[str, str]:
    answers: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise fail(f"--set expects KEY=VALUE, got {pair!r}")
        answers[key.strip()] = value
    return answers


def _ask(field: dict[str, Any], current: Any, interactive: bool) -> Any:
    """One non-secret field's value, asked again until it is valid."""
    key = field["key"]
    default = current if current is not None else field.get("default")
    while True:
        if not interactive:
            return default
        text = typer.prompt(
            f"{key} — {field.get('description', '')}".rstrip(" —"),
            default="" if default is None else str(default),
            show_default=default is not None,
        )
        if text == "" and not field.get("required"):
            return default
        try:
            return coerce(field, text, key)
        except PluginError as exc:
            out.print(f"  {exc}", markup=False)


def _ask_secret(field: dict[str, Any], env: dict[str, str], interactive: bool) -> str | None:
    """A new secret, or None to keep what the environment has."""
    var = field.get("env_var")
    if not var:
        raise fail(f"secret field {field['key']!r} names no env_var; the provider must fix it")
    if not interactive:
        return None
    have = " (set; Enter keeps it)" if env.get(var) else ""
    text = typer.prompt(f"{field['key']} ({var}){have}", default="", hide_input=True)
    return text or None


def memory_setup_command(
    name: Annotated[
        str | None, typer.Argument(help="Provider name; default: the active one.")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="KEY=VALUE, answers a field (repeat).")
    ] = None,
    no_input: Annotated[
        bool, typer.Option("--no-input", help="Ask nothing: --set values, else current/defaults.")
    ] = False,
) -> None:
    """Configure a memory provider and make it the active one."""
    cfg = settings()
    chosen = name or cfg.memory.provider
    if not chosen:
        names = ", ".join(
            i.name for i in discover_memory_providers(cfg.home, None, check_available=False)
        )
        raise fail(f"name a provider: chorus memory setup NAME (installed: {names or 'none'})")
    provider = _load(cfg, chosen)
    try:
        fields = config_fields(provider)
    except PluginError as exc:
        raise fail(str(exc)) from None
    answers = _answers(set_ or [])
    unknown = sorted(set(answers) - {f["key"] for f in fields})
    if unknown:
        raise fail(f"{chosen} has no setting {', '.join(unknown)}")
    env = secrets_environment(cfg.home)
    try:
        values, secrets = _fill(
            fields, answers, cfg.memory.providers.get(chosen, {}), env, ask=not no_input
        )
        resolve_config(provider, values, {**env, **secrets})
    except PluginError as exc:
        raise fail(str(exc)) from None
    try:
        for var, secret in secrets.items():
            set_secret(cfg.home, var, secret)
        path = set_memory_provider(cfg.home, chosen, values)
        provider.save_config(dict(values), cfg.home)
    except (GatewayError, OSError) as exc:
        raise fail(str(exc)) from None
    out.print(f"wrote memory.providers.{chosen} to {path}", markup=False)
    for var in secrets:
        out.print(f"wrote {var} to {cfg.home / '.env'}", markup=False)
    _report_available(provider)
    out.print(RESTART_NOTE, markup=False)


def _fill(
    fields: list[dict[str, Any]],
    answers: dict[str, str],
    current: dict[str, Any],
    env: dict[str, str],
    *,
    ask: bool,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each field's value from ``--set``, else asked (or kept): the settings that are
    set, and the secrets by their variable. Raises ``PluginError`` for a bad ``--set``."""
    values: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    for field in fields:
        key = field["key"]
        if field.get("secret"):
            secret = answers.get(key) or _ask_secret(field, env, ask and key not in answers)
            if secret:
                secrets[str(field["env_var"])] = secret
        elif key in answers:
            values[key] = coerce(field, answers[key], key)
        else:
            values[key] = _ask(field, current.get(key), ask)
    return {k: v for k, v in values.items() if v is not None}, secrets


def _report_available(provider: MemoryProvider) -> bool:
    try:
        available = bool(provider.is_available())
    except Exception as exc:
        out.print(f"available: no ({type(exc).__name__} asking)", markup=False)
        return False
    reason = getattr(provider, "unavailable_reason", None)
    detail = f" ({reason})" if not available and reason else ""
    out.print(f"available: {'yes' if available else 'no'}{detail}", markup=False)
    return available


def _ago(at: float) -> str:
    seconds = max(0, int(time.time() - at))
    return f"{seconds}s ago" if seconds < 120 else f"{seconds // 60} min ago"


def memory_status_command() -> None:
    """The active memory provider: available, settings valid, last start and last error."""
    cfg = settings()
    name = cfg.memory.provider
    if not name:
        out.print("provider: none (built-in memory only)")
        return
    out.print(f"provider: {name}", markup=False)
    provider = _load(cfg, name)
    healthy = _report_available(provider)
    try:
        resolve_config(provider, cfg.memory.providers.get(name, {}), secrets_environment(cfg.home))
        out.print("settings: ok")
    except PluginError as exc:
        out.print(f"settings: {exc}", markup=False)
        healthy = False
    with ProviderHealth(database_location(cfg)) as health:
        events = health.events(name)
    started, failed = events.get("started"), events.get("failed")
    if started is not None:
        out.print(
            f"last started: {_ago(started.at)} ({started.detail}, pid {started.pid})", markup=False
        )
    else:
        out.print("last started: never")
    if failed is not None:
        out.print(
            f"last error: {failed.method}: {failed.detail}, {_ago(failed.at)} (pid {failed.pid})",
            markup=False,
        )
    else:
        out.print("last error: none")
    if not healthy:
        raise typer.Exit(1)

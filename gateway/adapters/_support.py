"""Helpers every platform adapter needs, written once."""

from __future__ import annotations

from pydantic import SecretStr


def secret_value(value: SecretStr | None, name: str) -> str:
    """The secret's text; ``ValueError`` naming the setting (``name``) when it is unset."""
    text = value.get_secret_value() if value is not None else ""
    if not text:
        raise ValueError(f"{name} is not set")
    return text


def has_secret(value: SecretStr | None) -> bool:
    return value is not None and bool(value.get_secret_value())

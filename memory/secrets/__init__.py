"""Each person's secrets (credentials for tools), sealed at rest.

``SecretStore`` keeps them in ``state.db`` or PostgreSQL; ``SecretKey`` seals
them with the key from ``CHORUS_SECRET_KEY``. A tool that needs a person's
credential asks ``SecretStore.get(person, name)``.
"""

from memory.secrets._crypto import MIN_KEY_CHARS, SecretKey, new_key_text
from memory.secrets._store import (
    MAX_VALUE_CHARS,
    NAME_PATTERN,
    NO_KEY,
    SecretRequest,
    SecretStore,
    valid_name,
)

__all__ = [
    "MAX_VALUE_CHARS",
    "MIN_KEY_CHARS",
    "NAME_PATTERN",
    "NO_KEY",
    "SecretKey",
    "SecretRequest",
    "SecretStore",
    "new_key_text",
    "valid_name",
]

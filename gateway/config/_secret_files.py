"""Secrets from files: ``<NAME>_FILE`` holds the path of a file with ``<NAME>``'s value.

Docker and Kubernetes mount secrets as files; every secret setting can be given
that way: its conventional variable (``TELEGRAM_BOT_TOKEN_FILE``,
``OPENAI_API_KEY_FILE``, ``DATABASE_URL_FILE``), its ``CHORUS_<SECTION>__<KEY>``
variable (``CHORUS_REDIS__URL_FILE``), and a memory provider's secret variable
(a name ending in ``_KEY``, ``_TOKEN``, ``_SECRET`` or ``_PASSWORD``). The
file's content, without surrounding blanks, is the value; it is registered as a
secret so that no log line shows it; an empty file leaves the secret unset, like
an empty variable. Setting both ``<NAME>`` and ``<NAME>_FILE`` is an error, as
is a file that cannot be read.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from pathlib import Path

from gateway.errors import ConfigError
from gateway.logs import register_secret

logger = logging.getLogger(__name__)

FILE_SUFFIX = "_FILE"
PROVIDER_SECRET_ENDINGS = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
"""How a memory provider's secret variable ends (``MEM0_API_KEY``)."""


def expand_secret_files(
    environ: Mapping[str, str], secret_names: Collection[str]
) -> dict[str, str]:
    """``environ`` with every secret's ``<NAME>_FILE`` replaced by ``<NAME>`` and its content."""
    expanded = dict(environ)
    for name, location in sorted(environ.items()):
        upper = name.upper()
        if not upper.endswith(FILE_SUFFIX):
            continue
        base = name[: -len(FILE_SUFFIX)]
        if not _is_secret(base, secret_names):
            continue
        del expanded[name]
        if environ.get(base):
            raise ConfigError(f"{base} and {name} are both set; set only one of them")
        value = _read(name, location)
        if value:
            expanded[base] = value
    return expanded


def _is_secret(base: str, secret_names: Collection[str]) -> bool:
    upper = base.upper()
    return upper in secret_names or upper.endswith(PROVIDER_SECRET_ENDINGS)


def _read(name: str, location: str) -> str:
    path = Path(location).expanduser()
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        logger.warning("%s: cannot read %s (%s)", name, path, exc.strerror)
        raise ConfigError(f"{name}: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: {path} is not UTF-8 text") from None
    if not value:
        logger.info("%s: %s is empty; the secret stays unset", name, path)
        return ""
    register_secret(value)
    logger.debug("%s read from %s", name[: -len(FILE_SUFFIX)], path)
    return value

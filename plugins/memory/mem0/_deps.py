"""Importing ``mem0`` (the ``mem0ai`` package) on first use, quietly and privately.

Nothing here imports mem0 at module level: listing providers must stay cheap
(mem0 takes seconds to import) and must work without it. :func:`installed`
asks the import system whether mem0 and qdrant-client can be found, without
running them; :func:`load` imports them when a session starts.

Before the import, ``MEM0_TELEMETRY`` is set to ``False`` (mem0 would otherwise
send usage events to PostHog and fetch notices from GitHub) and ``MEM0_DIR``,
unless already set, to a directory under ``CHORUS_HOME/providers/mem0/``:
mem0 creates that directory and writes a ``config.json`` into it when it is
imported, and would use ``~/.mem0`` otherwise. mem0 reads both once per
process, so the first home that loads it wins. mem0 logs memory text at INFO;
its logger is raised to WARNING unless something already set its level, and
its few WARNING lines that quote memory text are turned into DEBUG lines.

mem0 uses spaCy when it is installed (``mem0ai[nlp]``) and would download the
``en_core_web_sm`` model if it is missing; then it is told spaCy failed to load
instead, so nothing is fetched. (``mem0ai[extras]`` brings fastembed, which
fetches its BM25 model on first use: install that model too or leave the
extra out.) ``chorus[mem0]`` installs neither.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import threading
from pathlib import Path
from types import ModuleType

from memory.providers import provider_dir
from plugins.memory._kit import ProviderUnavailable, findable, install_hint

from ._config import PROVIDER_NAME

logger = logging.getLogger(__name__)

INSTALL_HINT = install_hint("mem0")
UNAVAILABLE_REASON = f"the mem0 memory provider needs the mem0ai package: {INSTALL_HINT}"
MEM0_HOME = ".mem0"
"""Where ``MEM0_DIR`` points, under the provider's shared directory."""

_lock = threading.Lock()
_failed = False


_QUOTING = ("Entity upsert failed for", "Skipping invalid message format")
"""How the WARNING lines of ``mem0.memory.main`` that quote memory text begin."""


class _DemoteQuotes(logging.Filter):
    """A mem0 line that quotes memory text becomes a DEBUG line (dropped unless DEBUG is on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG or not str(record.msg).startswith(_QUOTING):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


class Mem0Unavailable(ProviderUnavailable):
    """mem0 (or qdrant-client) cannot be imported here; the message says how to fix it."""


def installed() -> bool:
    """Whether mem0 and qdrant-client can be imported (found, and no import failed yet)."""
    return not _failed and findable("mem0", "qdrant_client")


def _quiet(module: ModuleType) -> None:
    """Telemetry off even if mem0 was imported before us; its INFO lines carry memory text."""
    for name in ("mem0.memory.telemetry", "mem0.memory.main"):
        sub = importlib.import_module(name)
        if hasattr(sub, "MEM0_TELEMETRY"):
            setattr(sub, "MEM0_TELEMETRY", False)  # noqa: B010 (an untyped module)
    mem0_logger = logging.getLogger(module.__name__)
    if mem0_logger.level == logging.NOTSET:
        mem0_logger.setLevel(logging.WARNING)
    main_logger = logging.getLogger(f"{module.__name__}.memory.main")
    if not any(isinstance(f, _DemoteQuotes) for f in main_logger.filters):
        main_logger.addFilter(_DemoteQuotes())


def _no_model_download() -> None:
    """With spaCy but without its model, make mem0 skip spaCy rather than download it."""
    if not findable("spacy"):
        return
    try:
        importlib.metadata.distribution("en_core_web_sm")
    except importlib.metadata.PackageNotFoundError:
        models = importlib.import_module("mem0.utils.spacy_models")
        for flag in ("_load_failed_full", "_load_failed_lemma"):
            setattr(models, flag, True)
        logger.info("spaCy has no en_core_web_sm model; mem0 runs without spaCy")


def load(chorus_home: Path) -> ModuleType:
    """The ``mem0`` module, imported with telemetry off and its files under ``chorus_home``.

    Raises:
        Mem0Unavailable: mem0 or qdrant-client does not import.
    """
    global _failed
    with _lock:
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ.setdefault("MEM0_DIR", str(provider_dir(chorus_home, PROVIDER_NAME) / MEM0_HOME))
        try:
            module = importlib.import_module("mem0")
            importlib.import_module("qdrant_client")
        except ImportError as exc:
            _failed = True
            logger.warning("%s (%s)", UNAVAILABLE_REASON, type(exc).__name__)
            raise Mem0Unavailable(UNAVAILABLE_REASON) from exc
        _quiet(module)
        _no_model_download()
        return module

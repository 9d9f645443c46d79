"""The text of a shared document: plain text, Markdown, CSV, JSON, or a PDF's text.

A document's kind is known from its MIME type or, where a platform gives only a
generic one (``application/octet-stream``), from its file name. Text files are
read as UTF-8 (a byte that is not becomes U+FFFD); a PDF's pages are extracted
with ``pypdf``. A PDF that cannot be parsed or is encrypted raises
``UnreadableDocument``, never anything else.
"""

from __future__ import annotations

import io
import logging
from pathlib import PurePosixPath
from typing import Literal

logger = logging.getLogger(__name__)

DocumentKind = Literal["text", "pdf"]

TEXT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/x-markdown",
        "text/csv",
        "text/tab-separated-values",
        "application/csv",
        "application/json",
        "application/x-ndjson",
    }
)
TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".csv", ".tsv", ".json", ".log"})


class UnreadableDocument(Exception):
    """The file is of a readable kind but its content could not be read."""


def document_kind(name: str, mime_type: str) -> DocumentKind | None:
    """How ``name`` of ``mime_type`` is read, or None when chorus cannot read it."""
    mime = mime_type.split(";")[0].strip().lower()
    suffix = PurePosixPath(name.lower()).suffix
    if mime == "application/pdf" or suffix == ".pdf":
        return "pdf"
    if mime in TEXT_TYPES or suffix in TEXT_SUFFIXES:
        return "text"
    return None


def document_text(kind: DocumentKind, data: bytes) -> str:
    """The text of a document of ``kind``; ``UnreadableDocument`` when it has none to give."""
    if kind == "text":
        return data.decode("utf-8-sig", errors="replace")
    return _pdf_text(data)


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader  # loaded when a PDF comes, not at start-up
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise UnreadableDocument("encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
    except UnreadableDocument:
        raise
    except (PyPdfError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise UnreadableDocument(type(exc).__name__) from exc
    except RecursionError as exc:  # a crafted PDF of deeply nested objects
        raise UnreadableDocument("too deeply nested") from exc
    return "\n\n".join(page.strip() for page in pages if page.strip())


def truncated(text: str, limit: int, note: str) -> str:
    """``text`` cut to ``limit`` characters, with ``note`` (``{total}``, ``{kept}``) when cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + note.format(total=len(text), kept=limit)

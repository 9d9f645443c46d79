"""The three Hindsight calls chorus makes, through hindsight-client, each bounded in time.

hindsight-client 1.1 is async (aiohttp); its sync wrappers reuse whatever
event loop the thread has, and an aiohttp session belongs to the loop that
made it. A provider is called from any thread (never from an event loop), so
every call here makes its own client, runs it to completion with
:func:`asyncio.run` (in a helper thread if this thread has a running loop) and
closes it: no session outlives its loop, nothing is shared between threads.

Each call is bounded twice: the client's own request timeout and an
:func:`asyncio.wait_for` around the whole call, so a server that accepts the
connection and never answers costs ``timeout`` seconds and no more. The
client's retry of 429/503 is turned off (``max_attempts=1``): the circuit
breaker decides when to try again.

The routes (``/v1/default/banks/{bank_id}/...``): ``POST memories`` (retain),
``POST memories/recall`` and ``POST reflect``; for a person's data,
``GET memories/list`` and ``DELETE`` of the bank. A bank the server does not know
yet (404 on recall or reflect) has no memories: that is not a failure.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from ._config import Settings
from ._deps import Sdk

T = TypeVar("T")
USER_AGENT = "chorus-memory"
LIST_PAGE = 100


@dataclass(frozen=True)
class Memory:
    """One recalled memory: its text and, when Hindsight knows it, when it happened."""

    id: str
    text: str
    type: str | None = None
    when: str | None = None

    def public(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text}
        if self.type:
            data["type"] = self.type
        if self.when:
            data["when"] = self.when
        return data


def _run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hindsight") as pool:
        return pool.submit(asyncio.run, coro).result()


def _memory(item: Any) -> Memory | None:
    text = getattr(item, "text", None)
    if not isinstance(text, str) or not text.strip():
        return None
    when = getattr(item, "occurred_start", None) or getattr(item, "mentioned_at", None)
    kind = getattr(item, "type", None)
    return Memory(
        id=str(getattr(item, "id", "")),
        text=text.strip(),
        type=kind if isinstance(kind, str) else None,
        when=when if isinstance(when, str) else None,
    )


class HindsightAPI:
    def __init__(self, sdk: Sdk, settings: Settings) -> None:
        self._sdk = sdk
        self._settings = settings

    def _not_found(self, exc: BaseException) -> bool:
        return isinstance(exc, self._sdk.api_exception) and getattr(exc, "status", None) == 404

    def _call(self, timeout: float, call: Callable[[Any], Awaitable[T]]) -> T:
        async def go() -> T:
            client = self._sdk.client_class(
                base_url=self._settings.base_url,
                api_key=self._settings.api_key or None,
                timeout=timeout,
                user_agent=USER_AGENT,
                max_attempts=1,
            )
            try:
                return await asyncio.wait_for(call(client), timeout)
            finally:
                await client.aclose()

        return _run(go())

    def retain(
        self,
        bank_id: str,
        content: str,
        *,
        timeout: float,
        context: str | None = None,
        document_id: str | None = None,
        timestamp: str | None = None,
        metadata: dict[str, str] | None = None,
        tags: list[str] | None = None,
        asynchronous: bool = False,
    ) -> int:
        """Retain ``content`` in ``bank_id`` (a document upserts by its id); items accepted.

        ``asynchronous``: Hindsight answers once it has queued the content and
        extracts the facts later; otherwise it answers when the facts are stored,
        so a failed extraction is a failed call (and the caller keeps the content).
        """

        async def call(client: Any) -> int:
            response = await client.aretain(
                bank_id=bank_id,
                content=content,
                timestamp=timestamp,
                context=context,
                document_id=document_id,
                metadata=metadata,
                tags=tags,
                retain_async=asynchronous,
            )
            if not getattr(response, "success", False):
                raise RuntimeError("Hindsight did not accept the retain")
            return int(getattr(response, "items_count", 0) or 0)

        return self._call(timeout, call)

    def recall(
        self, bank_id: str, query: str, *, timeout: float, max_tokens: int, budget: str
    ) -> list[Memory]:
        async def call(client: Any) -> list[Memory]:
            try:
                response = await client.arecall(
                    bank_id=bank_id, query=query, max_tokens=max_tokens, budget=budget
                )
            except Exception as exc:
                if self._not_found(exc):
                    return []
                raise
            found = (_memory(item) for item in getattr(response, "results", None) or [])
            return [m for m in found if m is not None]

        return self._call(timeout, call)

    def reflect(
        self, bank_id: str, query: str, *, timeout: float, budget: str, context: str | None
    ) -> str:
        async def call(client: Any) -> str:
            try:
                response = await client.areflect(
                    bank_id=bank_id, query=query, budget=budget, context=context
                )
            except Exception as exc:
                if self._not_found(exc):
                    return ""
                raise
            text = getattr(response, "text", "")
            return text.strip() if isinstance(text, str) else ""

        return self._call(timeout, call)

    def list_all(self, bank_id: str, *, timeout: float) -> list[dict[str, Any]]:
        """Every memory unit of the bank (``[]`` for a bank the server does not know)."""

        async def call(client: Any) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            while True:
                try:
                    page = await client.alist_memories(
                        bank_id=bank_id, limit=LIST_PAGE, offset=len(found)
                    )
                except Exception as exc:
                    if self._not_found(exc):
                        return found
                    raise
                items = list(getattr(page, "items", None) or [])
                found.extend(
                    {"id": str(i.id), "text": i.text or "", "date": i.var_date or ""} for i in items
                )
                if not items or len(found) >= int(getattr(page, "total", 0) or 0):
                    return found

        return self._call(timeout, call)

    def delete_bank(self, bank_id: str, *, timeout: float) -> int:
        """Delete the bank and all in it; how many it held (0 when it did not exist)."""

        async def call(client: Any) -> int:
            try:
                answer = await client.adelete_bank(bank_id)
            except Exception as exc:
                if self._not_found(exc):
                    return 0
                raise
            return int(getattr(answer, "deleted_count", 0) or 0)

        return self._call(timeout, call)

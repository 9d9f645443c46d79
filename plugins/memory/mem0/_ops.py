"""One user's memory operations: a backend call through the guard, then the owner check.

Everything the provider does to mem0 goes through :class:`UserOps`, so every
call is counted by the circuit breaker and no record of another user leaves
it: searches keep only records whose ``user_id`` is the caller's, and an id is
only updated or deleted after fetching it and finding it theirs.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from plugins.memory._kit import Guard

from . import _tools
from ._backend import AddOutcome, Backend, MemoryRecord, Message, StoreBusy

ADD_DUPLICATE_PROBE = 5
"""How many close memories ``mem0_add`` compares its content with before adding."""


def same_text(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


class UserOps:
    def __init__(
        self,
        backend: Backend,
        guard: Guard,
        user_id: str,
        wait: float,
        also: tuple[str, ...] = (),
    ) -> None:
        self.backend = backend
        self.guard = guard
        self.user_id = user_id
        self.wait = wait
        self.also = also
        """Further user ids a recall reads (never writes): a linked person's accounts."""

    def search(
        self, query: str, limit: int, *, count_busy: bool = True, user_id: str | None = None
    ) -> list[MemoryRecord]:
        """The memories of ``user_id`` (the owner's by default) that match ``query``."""
        user_id = user_id or self.user_id
        call = partial(self.backend.search, user_id, query, limit, wait=self.wait)
        uncounted = () if count_busy else (StoreBusy,)
        records = self.guard.run("search", call, uncounted=uncounted)
        return [r for r in records if r.user_id == user_id and r.text.strip()][:limit]

    def recall(self, query: str, limit: int, *, count_busy: bool = True) -> list[MemoryRecord]:
        """:meth:`search` of the owner's memories, then of each of :attr:`also`."""
        found: list[MemoryRecord] = []
        for user_id in (self.user_id, *self.also):
            found += self.search(query, limit, count_busy=count_busy, user_id=user_id)
        return found

    def owned(self, memory_id: str) -> MemoryRecord | None:
        """The user's memory ``memory_id``; None when it is missing or someone else's."""
        call = partial(self.backend.get, self.user_id, memory_id, wait=self.wait)
        record = self.guard.run("get", call)
        return record if record is not None and record.user_id == self.user_id else None

    def add(self, messages: list[Message], metadata: dict[str, Any], *, infer: bool) -> AddOutcome:
        call = partial(
            self.backend.add, self.user_id, messages, metadata=metadata, infer=infer, wait=self.wait
        )
        return self.guard.run("add", call)

    def delete_if_owned(self, memory_id: str) -> bool:
        if self.owned(memory_id) is None:
            return False
        self.guard.run(
            "delete", partial(self.backend.delete, self.user_id, memory_id, wait=self.wait)
        )
        return True

    # -- the tools -----------------------------------------------------------

    def _require(self, memory_id: str) -> None:
        if self.owned(memory_id) is None:
            raise _tools.ToolError(f"no memory with id {memory_id} belongs to this person")

    def run_tool(self, name: str, args: dict[str, Any], default_limit: int) -> dict[str, Any]:
        """One tool call's result (without ``success``); ToolError for bad input."""
        if name == _tools.MEM0_SEARCH:
            query = _tools.query_arg(args)
            records = self.recall(query, _tools.limit_arg(args, default_limit))
            return {"results": [r.public() for r in records], "count": len(records)}
        if name == _tools.MEM0_ADD:
            content = _tools.content_arg(args)
            for record in self.search(content, ADD_DUPLICATE_PROBE):
                if same_text(record.text, content):
                    return {"id": record.id, "memory": record.text, "duplicate": True}
            message: list[Message] = [{"role": "user", "content": content}]
            outcome = self.add(message, {"source": "chorus_tool"}, infer=False)
            if outcome.memory_ids:
                return {"id": outcome.memory_ids[0], "memory": content}
            return {"queued": True, "event_id": outcome.event_id, "memory": content}
        if name not in (_tools.MEM0_UPDATE, _tools.MEM0_DELETE):
            raise _tools.ToolError(f"unknown tool '{name}'")
        memory_id = _tools.memory_id_arg(args)
        if name == _tools.MEM0_UPDATE:
            content = _tools.content_arg(args)
            self._require(memory_id)
            call = partial(self.backend.update, self.user_id, memory_id, content, wait=self.wait)
            self.guard.run("update", call)
            return {"id": memory_id, "memory": content}
        self._require(memory_id)
        self.guard.run(
            "delete", partial(self.backend.delete, self.user_id, memory_id, wait=self.wait)
        )
        return {"id": memory_id, "deleted": True}

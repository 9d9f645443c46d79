"""The ``fact_store`` and ``fact_feedback`` tools: schemas, argument checks, actions.

Each action returns a JSON-ready dict with ``"success": true``; bad input raises
:class:`ToolError`, whose message the provider returns as ``{"success": false,
"error": ...}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

from . import _graph, _unbind
from ._embed import Embeddings
from ._fact import StoreError
from ._search import search
from ._store import FactStore

ACTIONS = ("add", "search", "probe", "related", "reason", "contradict", "update", "remove", "list")
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_CONTENT = 2000
_CATEGORY_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")

FACT_STORE = "fact_store"
FACT_FEEDBACK = "fact_feedback"

FACT_STORE_SCHEMA: dict[str, Any] = {
    "name": FACT_STORE,
    "description": (
        "Deep structured memory of facts about this user, kept across sessions. Use it "
        "alongside the memory tool: memory for always-on context, fact_store for deep "
        "recall and compositional questions.\n"
        "Actions: add (store a fact: content, optional category); search (ranked lookup: "
        "query); probe (all facts about one person or thing: entity); related (entities "
        "that share facts with an entity, and those facts: entity); reason (facts linked "
        "to ALL of several entities, else to most of them: entities); contradict (pairs "
        "of facts that seem to conflict, optionally about an entity); update (fact_id, "
        "new content and/or category); remove (fact_id); list (recent facts, optionally "
        "of one category)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
            "content": {"type": "string", "description": "add: the fact; update: new text."},
            "query": {"type": "string", "description": "search: what to look for."},
            "entity": {
                "type": "string",
                "description": "probe, related: a person, place or thing; contradict: optional.",
            },
            "entities": {
                "type": "array",
                "items": {"type": "string"},
                "description": "reason: two or more entities the facts must connect.",
            },
            "fact_id": {"type": "integer", "description": "update, remove: the fact's id."},
            "category": {
                "type": "string",
                "description": "add, update: the fact's category (e.g. preference, decision, "
                "project); search, list: only this category.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"Most results to return (default {DEFAULT_LIMIT}).",
            },
        },
        "required": ["action"],
    },
}

FACT_FEEDBACK_SCHEMA: dict[str, Any] = {
    "name": FACT_FEEDBACK,
    "description": (
        "Rate a fact fact_store returned: helpful=true raises its trust, false lowers it; "
        "trusted facts rank higher."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "fact_id": {"type": "integer", "description": "The fact's id."},
            "helpful": {"type": "boolean", "description": "Whether the fact was right and useful."},
        },
        "required": ["fact_id", "helpful"],
    },
}


class ToolError(BadToolInput):
    """Bad tool input; the message is shown to the model."""


@dataclass(frozen=True)
class Options:
    """How the provider is set up for this call."""

    use_hrr: bool = True
    unbind: bool = False
    """probe, related and reason by unbinding the bank (else by joins)."""
    embeddings: Embeddings | None = None


def _text(args: dict[str, Any], key: str, action: str) -> str:
    value = args.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ToolError(f"'{action}' needs '{key}'")
    if not isinstance(value, str):
        raise ToolError(f"'{key}' must be a string")
    return value.strip()


def _optional_text(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ToolError(f"'{key}' must be a string")
    return value.strip()


def fact_id(args: dict[str, Any], action: str) -> int:
    value = args.get("fact_id")
    if value is None:
        raise ToolError(f"'{action}' needs 'fact_id'")
    if isinstance(value, bool):
        raise ToolError("'fact_id' must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ToolError("'fact_id' must be an integer")


def _limit(args: dict[str, Any]) -> int:
    value = args.get("limit")
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ToolError("'limit' must be an integer")
    try:
        number = int(value)
    except ValueError:
        raise ToolError("'limit' must be an integer") from None
    return max(1, min(MAX_LIMIT, number))


def _category(args: dict[str, Any]) -> str | None:
    value = _optional_text(args, "category")
    if value is None:
        return None
    category = value.lower()
    if not _CATEGORY_RE.fullmatch(category):
        raise ToolError("'category' must be one word of letters, digits, '_' or '-' (max 40)")
    return category


def _content(args: dict[str, Any], action: str, *, required: bool = True) -> str | None:
    raw = _text(args, "content", action) if required else _optional_text(args, "content")
    if raw is None:
        return None
    content = strip_memory_context(raw).strip()
    if not content:
        raise ToolError("'content' holds only recalled memory context; nothing to store")
    if len(content) > MAX_CONTENT:
        raise ToolError(f"'content' is longer than {MAX_CONTENT} characters; store shorter facts")
    refusal = scan_memory_content(content)
    if refusal is not None:
        raise ToolError(refusal)
    return content


def _entities(args: dict[str, Any]) -> list[str]:
    value = args.get("entities")
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError("'reason' needs 'entities', a list of names")
    names = list(dict.fromkeys(v.strip() for v in value if v.strip()))
    if not names:
        raise ToolError("'reason' needs 'entities', a list of names")
    return names[:10]


def _add(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    content = _content(args, "add")
    assert content is not None
    fact, created = store.add(content, _category(args))
    if opts.embeddings is not None:
        opts.embeddings.fill(store)
    return {"success": True, "fact_id": fact.id, "created": created, "fact": fact.as_json()}


def _search(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    query = _text(args, "query", "search")
    hits = search(
        store,
        query,
        limit=_limit(args),
        category=_category(args),
        use_hrr=opts.use_hrr,
        query_embedding=None if opts.embeddings is None else opts.embeddings.query(query),
    )
    store.bump_retrievals(h.fact.id for h in hits)
    facts = [{**h.fact.as_json(), "score": h.score} for h in hits]
    return {"success": True, "count": len(facts), "facts": facts}


def _probe(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    name = _text(args, "entity", "probe")
    bank = store.bank() if opts.unbind else None
    if bank is None:
        matched, facts = _graph.probe(store, name, _limit(args))
    else:
        matched, facts = _unbind.probe(store, bank, name, _limit(args))
    return {
        "success": True,
        "entity": name,
        "matched_entities": matched,
        "count": len(facts),
        "facts": [f.as_json() for f in facts],
    }


def _related(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    name = _text(args, "entity", "related")
    bank = store.bank() if opts.unbind else None
    if bank is None:
        matched, found = _graph.related(store, name, _limit(args))
    else:
        matched, found = _unbind.related(store, bank, name, _limit(args))
    if not matched:
        raise ToolError(f"no entity called '{name}' is known")
    return {"success": True, "entity": name, "matched_entities": matched, "related": found}


def _reason(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    names = _entities(args)
    bank = store.bank() if opts.unbind else None
    if bank is None:
        result = _graph.reason(store, names, _limit(args))
    else:
        result = _unbind.reason(store, bank, names, _limit(args))
    return {
        "success": True,
        "entities": names,
        "matched": result.matched,
        "of": len(names),
        "all_matched": bool(result.facts) and result.matched == len(names),
        "unknown_entities": result.unknown,
        "count": len(result.facts),
        "facts": [f.as_json() for f in result.facts],
    }


def _contradict(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    pairs = _graph.contradictions(store, _optional_text(args, "entity"), _limit(args))
    return {"success": True, "count": len(pairs), "pairs": pairs}


def _update(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    number = fact_id(args, "update")
    content, category = _content(args, "update", required=False), _category(args)
    if content is None and category is None:
        raise ToolError("'update' needs 'content' or 'category'")
    fact = store.update(number, content, category)
    if opts.embeddings is not None and content is not None:
        opts.embeddings.fill(store)
    return {"success": True, "fact": fact.as_json()}


def _remove(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    number = fact_id(args, "remove")
    if not store.remove(number):
        raise ToolError(f"no fact with id {number}")
    return {"success": True, "removed": number}


def _list(store: FactStore, args: dict[str, Any], opts: Options) -> dict[str, Any]:
    facts = store.recent(_category(args), _limit(args))
    return {"success": True, "count": len(facts), "facts": [f.as_json() for f in facts]}


_ACTIONS: dict[str, Callable[[FactStore, dict[str, Any], Options], dict[str, Any]]] = {
    "add": _add,
    "search": _search,
    "probe": _probe,
    "related": _related,
    "reason": _reason,
    "contradict": _contradict,
    "update": _update,
    "remove": _remove,
    "list": _list,
}


def run_fact_store(
    store: FactStore, args: dict[str, Any], opts: Options | None = None
) -> dict[str, Any]:
    """Carry out one ``fact_store`` call; raises :class:`ToolError` on bad input."""
    action = args.get("action")
    if not isinstance(action, str) or action.strip().lower() not in _ACTIONS:
        raise ToolError(f"unknown action {action!r}; use one of: {', '.join(ACTIONS)}")
    try:
        return _ACTIONS[action.strip().lower()](store, args, opts or Options())
    except StoreError as exc:
        raise ToolError(str(exc)) from exc


def run_fact_feedback(store: FactStore, args: dict[str, Any]) -> dict[str, Any]:
    """Carry out one ``fact_feedback`` call; raises :class:`ToolError` on bad input."""
    number = fact_id(args, "fact_feedback")
    helpful = args.get("helpful")
    if not isinstance(helpful, bool):
        raise ToolError("'fact_feedback' needs 'helpful', true or false")
    try:
        fact = store.feedback(number, helpful)
    except StoreError as exc:
        raise ToolError(str(exc)) from exc
    return {"success": True, "fact_id": number, "trust": round(fact.trust, 3)}

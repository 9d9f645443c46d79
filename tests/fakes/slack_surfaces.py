"""The fake Slack's reactions, assistant thread statuses and Home tabs.

Written from Slack's Web API reference:

- ``reactions.add`` / ``reactions.remove`` (``channel``, ``timestamp``, ``name``) on a
  stored message: ``already_reacted``, ``no_reaction``, ``message_not_found``;
  ``missing_scope`` (with ``needed``) when ``reactions:write`` is not in ``scopes``;
- ``assistant.threads.setStatus`` (``channel_id``, ``thread_ts``, ``status``): an
  empty status clears it, and so does the app's next post in that thread (Slack
  clears it when the app replies); every call is kept in ``status_log``;
- ``views.publish`` (``user_id``, ``view`` as JSON): a ``home`` view of at most 100
  blocks (a section's text at most 3000 characters, a header's 150), kept per user.

``home_opened()`` and ``assistant_thread_started()`` build the events Slack sends.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

BOT_SCOPES = frozenset(
    {
        "app_mentions:read",
        "channels:history",
        "chat:write",
        "commands",
        "files:read",
        "files:write",
        "groups:history",
        "im:history",
        "mpim:history",
        "reactions:write",
        "users:read",
    }
)


class SlackSurfaces:
    """A mixin of ``FakeSlack`` (it needs ``store`` and ``_lock``)."""

    store: list[dict[str, Any]]
    _lock: threading.Lock

    def _init_surfaces(self) -> None:
        self.scopes: set[str] = set(BOT_SCOPES)
        self.reactions: dict[tuple[str, str], list[str]] = {}
        """``(channel, ts)`` → the reactions the bot has on that message."""
        self.reaction_log: list[tuple[str, str, str, str]] = []
        """``("add" | "remove", channel, ts, name)`` in the order they happened."""
        self.statuses: dict[tuple[str, str], str] = {}
        self.status_log: list[tuple[str, str, str]] = []
        """``(channel, thread_ts, status)``: every status set ("" clears), and "" for each
        one Slack cleared because the app posted in the thread."""
        self.views: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------- scripting

    def home_opened(self, user: str, channel: str, *, tab: str = "home") -> dict[str, Any]:
        """The ``app_home_opened`` event of ``user`` opening the app (``channel``: their DM
        with it)."""
        return {
            "type": "app_home_opened",
            "user": user,
            "channel": channel,
            "tab": tab,
            "event_ts": f"{time.time():.6f}",
        }

    def assistant_thread_started(self, user: str, channel: str, thread_ts: str) -> dict[str, Any]:
        """The ``assistant_thread_started`` event of a thread ``user`` opened in ``channel``."""
        with self._lock:
            self.store.append(
                {
                    "type": "message",
                    "subtype": "assistant_app_thread",
                    "user": user,
                    "channel": channel,
                    "text": "New chat",
                    "ts": thread_ts,
                    "thread_ts": thread_ts,
                }
            )
        return {
            "type": "assistant_thread_started",
            "assistant_thread": {
                "user_id": user,
                "context": {"channel_id": "", "team_id": "", "enterprise_id": ""},
                "channel_id": channel,
                "thread_ts": thread_ts,
            },
            "event_ts": f"{time.time():.6f}",
        }

    def reactions_on(self, channel: str, ts: str) -> list[str]:
        with self._lock:
            return list(self.reactions.get((channel, ts), []))

    # ---------------------------------------------------------------------- methods

    def _missing(self, scope: str) -> dict[str, Any] | None:
        if scope in self.scopes:
            return None
        provided = ",".join(sorted(self.scopes))
        return {"error": "missing_scope", "needed": scope, "provided": provided}

    def _stored(self, channel: str, ts: str) -> bool:
        return any(m.get("channel") == channel and m.get("ts") == ts for m in self.store)

    def _m_reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        missing = self._missing("reactions:write")
        if missing is not None:
            return missing
        channel, ts = str(params.get("channel") or ""), str(params.get("timestamp") or "")
        name = str(params.get("name") or "")
        if not name:
            return {"error": "invalid_name"}
        with self._lock:
            if not self._stored(channel, ts):
                return {"error": "message_not_found"}
            on = self.reactions.setdefault((channel, ts), [])
            if name in on:
                return {"error": "already_reacted"}
            on.append(name)
            self.reaction_log.append(("add", channel, ts, name))
        return {}

    def _m_reactions_remove(self, params: dict[str, Any]) -> dict[str, Any]:
        missing = self._missing("reactions:write")
        if missing is not None:
            return missing
        channel, ts = str(params.get("channel") or ""), str(params.get("timestamp") or "")
        name = str(params.get("name") or "")
        with self._lock:
            if not self._stored(channel, ts):
                return {"error": "message_not_found"}
            on = self.reactions.get((channel, ts), [])
            if name not in on:
                return {"error": "no_reaction"}
            on.remove(name)
            self.reaction_log.append(("remove", channel, ts, name))
        return {}

    def _m_assistant_threads_setStatus(self, params: dict[str, Any]) -> dict[str, Any]:
        if "chat:write" not in self.scopes and "assistant:write" not in self.scopes:
            return self._missing("chat:write") or {}
        channel, thread = str(params.get("channel_id") or ""), str(params.get("thread_ts") or "")
        if not channel or not thread:
            return {"error": "invalid_arguments"}
        status = str(params.get("status") or "")
        with self._lock:
            if not self._stored(channel, thread):
                return {"error": "invalid_thread_ts"}
            self.status_log.append((channel, thread, status))
            if status:
                self.statuses[(channel, thread)] = status
            else:
                self.statuses.pop((channel, thread), None)
        return {}

    def _posted_in_thread(self, channel: str, thread: str | None) -> None:
        """The app posted: Slack clears the thread's status (call with ``_lock`` held)."""
        if thread is not None and self.statuses.pop((channel, thread), None) is not None:
            self.status_log.append((channel, thread, ""))

    def _m_views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user_id") or "")
        view = params.get("view")
        if isinstance(view, str):
            try:
                view = json.loads(view)
            except ValueError:
                return {"error": "invalid_arguments"}
        if not user or not isinstance(view, dict):
            return {"error": "invalid_arguments"}
        if view.get("type") != "home" or not _valid_home(view.get("blocks")):
            return {"error": "invalid_arguments"}
        with self._lock:
            self.views[user] = view
        return {"view": {"id": f"V{len(self.views):08d}", **view}}


def _valid_home(blocks: Any) -> bool:
    if not isinstance(blocks, list) or len(blocks) > 100:
        return False
    for block in blocks:
        if not isinstance(block, dict):
            return False
        text = block.get("text")
        if block.get("type") == "section" and len(str((text or {}).get("text", ""))) > 3000:
            return False
        if block.get("type") == "header" and len(str((text or {}).get("text", ""))) > 150:
            return False
    return True


def valid_blocks(blocks: Any) -> bool:
    """Blocks as ``chat.postMessage`` takes them: at most 50; a section's text at most 3000
    characters; an action's button with a text, an ``action_id`` and a value of at most
    2000 characters."""
    if not isinstance(blocks, list) or len(blocks) > 50:
        return False
    for block in blocks:
        if block.get("type") == "section" and len(block["text"]["text"]) > 3000:
            return False
        if block.get("type") == "actions":
            for element in block.get("elements", []):
                if not element.get("action_id") or not element.get("text"):
                    return False
                if len(str(element.get("value", ""))) > 2000:
                    return False
    return True

"""The provider kit: a provider made of its own logic plus the kit gets the shared behaviour.

``NotebookProvider`` below is built here from ``plugins.memory._kit`` alone: its
backend is a notebook object of this test (each person's notes under an id the
kit derives from their user key) that can be told to fail. Driven through the
real :class:`MemoryManager`, it gets the ``sync_turn`` preamble, the guard and
its breaker, and the mapping of every error kind to the JSON tool error. The
rest checks the error family over every bundled provider and the kit's identity
and client-library helpers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memory.providers import MemoryManager, build_memory_context_block
from plugins.errors import PluginConfigError, PluginError
from plugins.memory._kit import (
    BackendFailed,
    BadToolInput,
    ClientLibrary,
    NotFound,
    Paused,
    ProviderError,
    ProviderUnavailable,
    Refused,
    RemoteProvider,
    Session,
    escape_id,
    unescape_id,
)

ALICE = "telegram:111"
BOB = "telegram:222"
SECRET = "my locker code is 4471"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Down(Exception):
    """What the notebook raises while it is down (a network error's stand-in)."""


class Notebook:
    """The test provider's backend: notes per store id; ``down`` makes every call fail."""

    def __init__(self) -> None:
        self.notes: dict[str, list[str]] = {}
        self.calls = 0
        self.down = False
        self.refuse = False

    def _enter(self) -> None:
        self.calls += 1
        if self.down:
            raise Down(f"connection refused while storing {SECRET}")
        if self.refuse:
            raise Refused("notebook refused the note")

    def add(self, store: str, text: str) -> None:
        self._enter()
        self.notes.setdefault(store, []).append(text)

    def find(self, store: str, word: str) -> list[str]:
        self._enter()
        return [n for n in self.notes.get(store, []) if word in n]


class NotebookProvider(RemoteProvider):
    """A provider that is its own logic (two tools, turns as notes) plus the kit."""

    provider_name = "notebook"
    dependency = ClientLibrary(("json",), "never missing")
    label = "Notebook"
    backend_label = "the notebook"
    tool_schemas: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "notebook_add",
            "description": "Add a note.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
        {
            "name": "notebook_find",
            "description": "Find notes with a word.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    ]

    def __init__(self, notebook: Notebook, **options: Any) -> None:
        super().__init__(**options)
        self.notebook = notebook

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        with self._lock:
            self.start_session(Session.of(session_id, kwargs))

    def system_prompt_block(self) -> str:
        return ""

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
        speaker: str | None = None,
    ) -> None:
        turn = self.turn(user_content, assistant_content, session_id, speaker)
        if turn is None:
            return
        note = f"{turn.session_id}|{turn.user}|{turn.assistant}"
        self.guard.run("add", partial(self.notebook.add, escape_id(turn.owner), note))

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        store = escape_id(self.owner(call.get("speaker")))
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise BadToolInput("text must be a non-empty string")
        if tool_name == "notebook_add":
            self.guard.run("add", partial(self.notebook.add, store, text))
            return {"stored": True}
        found = self.guard.run("find", partial(self.notebook.find, store, text))
        if not found:
            raise NotFound("find")
        return {"notes": found}


def manager_with(provider: NotebookProvider, home: Path, context: str = "primary") -> MemoryManager:
    manager = MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all(
        "s1", chorus_home=str(home), platform="telegram", user_key=ALICE, agent_context=context
    )
    assert manager.providers == [provider]
    return manager


def tool(manager: MemoryManager, name: str, **kwargs: Any) -> dict[str, Any]:
    args = kwargs.pop("args", None)
    answer = json.loads(manager.handle_tool_call(name, args if args is not None else kwargs))
    assert isinstance(answer, dict)
    return answer


# -- the sync_turn preamble ---------------------------------------------------


def test_the_preamble_stores_a_turn_stripped_under_its_owner_and_session(tmp_path: Path) -> None:
    notebook = Notebook()
    provider = NotebookProvider(notebook)
    manager = manager_with(provider, tmp_path)
    recalled = build_memory_context_block("an old note about tea")
    manager.sync_turn(f"{recalled}\n  I like green tea  ", "Noted.", session_id="s1")
    manager.sync_turn("Call me Bob", "Hi Bob", session_id="s2", speaker=BOB)
    manager.sync_turn("And coffee", "Noted too.")  # no session id: the session's own
    assert notebook.notes == {
        escape_id(ALICE): ["s1|I like green tea|Noted.", "s1|And coffee|Noted too."],
        escape_id(BOB): ["s2|Call me Bob|Hi Bob"],
    }


def test_the_preamble_skips_empty_turns_and_the_flush(tmp_path: Path) -> None:
    notebook = Notebook()
    provider = NotebookProvider(notebook)
    manager_with(provider, tmp_path)
    provider.sync_turn(build_memory_context_block("recalled only"), "  ")
    assert notebook.calls == 0
    flushing = NotebookProvider(notebook)
    manager = manager_with(flushing, tmp_path, context="flush")
    manager.sync_turn("Remember that I moved to Lisbon", "Saved to USER.md.")
    assert notebook.calls == 0 and notebook.notes == {}


def test_a_bad_speaker_fails_the_sync_and_is_recorded_by_the_manager(tmp_path: Path) -> None:
    failures: list[tuple[str, str, str]] = []
    provider = NotebookProvider(Notebook())
    manager = MemoryManager(on_failure=lambda *failure: failures.append(failure))
    manager.add_provider(provider)
    manager.initialize_all(
        "s1", chorus_home=str(tmp_path), platform="telegram", user_key=ALICE, agent_context="x"
    )
    manager.sync_turn("hello", "hi", speaker="not a user key")
    assert failures == [("notebook", "sync_turn", "MemoryPathError")]
    assert provider.notebook.notes == {}


# -- the guard and its breaker ----------------------------------------------------


def test_failures_pause_the_provider_and_the_cooldown_resumes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notebook, clock = Notebook(), Clock()
    provider = NotebookProvider(notebook, clock=clock, failure_threshold=3, cooldown=60)
    manager = manager_with(provider, tmp_path)
    notebook.down = True
    caplog.set_level(logging.INFO)
    for _ in range(3):
        failed = tool(manager, "notebook_add", text=SECRET)
        assert failed == {
            "success": False,
            "error": "notebook_add could not run: the notebook failed (Down)",
        }
    assert provider.breaker.is_open and notebook.calls == 3
    assert "pausing Notebook for 60 s" in caplog.text
    assert "4471" not in caplog.text.replace("DEBUG", "")  # text only at DEBUG, if at all
    paused = tool(manager, "notebook_find", text="tea")
    assert paused == {
        "success": False,
        "error": "Notebook is paused after 3 failures in a row; it tries again in 60 s",
    }
    manager.sync_turn("I like tea", "Noted.")  # raises Paused inside: isolated by the manager
    assert notebook.calls == 3  # nothing reached the notebook while paused
    notebook.down = False
    clock.now += 60
    assert tool(manager, "notebook_add", text="tea at five") == {"success": True, "stored": True}
    assert not provider.breaker.is_open and provider.breaker.failures == 0
    assert "notebook resumed: add succeeded after the pause" in caplog.text


def test_a_refusal_is_the_requests_fault_and_leaves_the_breaker_alone(tmp_path: Path) -> None:
    notebook = Notebook()
    provider = NotebookProvider(notebook, failure_threshold=2)
    manager = manager_with(provider, tmp_path)
    notebook.refuse = True
    for _ in range(4):
        refused = tool(manager, "notebook_add", text="a note")
        assert refused == {"success": False, "error": "notebook refused the note"}
    assert provider.breaker.failures == 0 and not provider.breaker.is_open


def test_a_failed_background_sync_raises_the_failure_to_the_manager(tmp_path: Path) -> None:
    failures: list[tuple[str, str, str]] = []
    notebook = Notebook()
    provider = NotebookProvider(notebook)
    manager = MemoryManager(on_failure=lambda *failure: failures.append(failure))
    manager.add_provider(provider)
    manager.initialize_all(
        "s1", chorus_home=str(tmp_path), platform="telegram", user_key=ALICE, agent_context="x"
    )
    notebook.down = True
    manager.sync_turn("hello", "hi")
    assert failures == [("notebook", "sync_turn", "BackendFailed")]
    with pytest.raises(BackendFailed) as raised:
        provider.sync_turn("hello", "hi")
    assert raised.value.cause == "Down" and raised.value.__cause__ is None
    assert SECRET not in str(raised.value)


# -- the tool-call wrapper --------------------------------------------------------


def test_every_error_kind_becomes_the_json_tool_error(tmp_path: Path) -> None:
    notebook = Notebook()
    provider = NotebookProvider(notebook)
    early = json.loads(provider.handle_tool_call("notebook_add", {"text": "x"}))
    assert early == {"success": False, "error": "Notebook is not ready for this session"}
    manager = manager_with(provider, tmp_path)
    assert [s["function"]["name"] for s in manager.get_all_tool_schemas()] == [
        "notebook_add",
        "notebook_find",
    ]
    assert tool(manager, "notebook_add", args=["not", "an", "object"]) == {
        "success": False,
        "error": "arguments must be a JSON object",
    }
    assert json.loads(provider.handle_tool_call("notebook_drop", {})) == {
        "success": False,
        "error": "unknown tool 'notebook_drop'",
    }
    assert tool(manager, "notebook_add", text="  ") == {
        "success": False,
        "error": "text must be a non-empty string",
    }
    assert tool(manager, "notebook_find", text="tea") == {
        "success": False,
        "error": "notebook_find: not found",
    }
    bad_speaker = json.loads(manager.handle_tool_call("notebook_add", {"text": "x"}, speaker=12345))
    assert bad_speaker == {
        "success": False,
        "error": "speaker must be a user key such as telegram:12345",
    }
    assert tool(manager, "notebook_add", text="green tea") == {"success": True, "stored": True}
    bobs = json.loads(manager.handle_tool_call("notebook_add", {"text": "tea"}, speaker=BOB))
    assert bobs == {"success": True, "stored": True}
    assert tool(manager, "notebook_find", text="tea") == {"success": True, "notes": ["green tea"]}
    provider.shutdown()


# -- the error family -------------------------------------------------------------


def test_every_providers_errors_belong_to_one_family_by_kind() -> None:
    from plugins.memory.byterover._provider import BrvPaused
    from plugins.memory.byterover._runner import BrvFailed, BrvMissing, BrvTimeout
    from plugins.memory.byterover._tools import ToolError as BrvToolError
    from plugins.memory.hindsight._deps import HindsightUnavailable
    from plugins.memory.hindsight._guard import BackendFailed as HindsightFailed
    from plugins.memory.hindsight._guard import HindsightPaused
    from plugins.memory.hindsight._tools import ToolError as HindsightToolError
    from plugins.memory.holographic._fact import StoreError
    from plugins.memory.holographic._tools import ToolError as HolographicToolError
    from plugins.memory.honcho._deps import HonchoUnavailable
    from plugins.memory.honcho._guard import HonchoFailed, HonchoPaused
    from plugins.memory.honcho._tools import ToolError as HonchoToolError
    from plugins.memory.mem0._backend import StoreBusy
    from plugins.memory.mem0._deps import Mem0Unavailable
    from plugins.memory.mem0._guard import Mem0Paused
    from plugins.memory.mem0._tools import ToolError as Mem0ToolError
    from plugins.memory.openviking._deps import OpenVikingUnavailable
    from plugins.memory.openviking._tools import ToolError as OpenVikingToolError
    from plugins.memory.retaindb._client import NotFound as RetainDBNotFound
    from plugins.memory.retaindb._client import Paused as RetainDBPaused
    from plugins.memory.retaindb._deps import RetainDBUnavailable
    from plugins.memory.retaindb._tools import ToolError as RetainDBToolError
    from plugins.memory.supermemory._client import Rejected
    from plugins.memory.supermemory._deps import SupermemoryUnavailable
    from plugins.memory.supermemory._tools import ToolError as SupermemoryToolError

    kinds: dict[type[Exception], list[type[Exception]]] = {
        Paused: [HindsightPaused, HonchoPaused, Mem0Paused, BrvPaused, RetainDBPaused],
        BackendFailed: [HindsightFailed, HonchoFailed],
        ProviderUnavailable: [
            HindsightUnavailable,
            HonchoUnavailable,
            Mem0Unavailable,
            OpenVikingUnavailable,
            RetainDBUnavailable,
            SupermemoryUnavailable,
            StoreBusy,
            BrvMissing,
            BrvTimeout,
            BrvFailed,
        ],
        Refused: [Rejected, StoreError, RetainDBNotFound],
        BadToolInput: [
            BrvToolError,
            HindsightToolError,
            HolographicToolError,
            HonchoToolError,
            Mem0ToolError,
            OpenVikingToolError,
            RetainDBToolError,
            SupermemoryToolError,
        ],
    }
    for kind, members in kinds.items():
        assert issubclass(kind, ProviderError) and issubclass(kind, PluginError)
        for member in members:
            assert issubclass(member, kind), (member, kind)
    assert issubclass(BadToolInput, ValueError) and issubclass(Paused, RuntimeError)
    from plugins.memory._kit import BadConfig

    assert issubclass(BadConfig, PluginConfigError) and issubclass(BadConfig, ProviderError)


# -- identity and the client library -----------------------------------------


def test_store_ids_are_injective_and_reversible() -> None:
    keys = ["telegram:1", "telegram_3a1:x", "slack#chat:C2", "discord:a_b", "discord:a-b", "ü:1"]
    ids = [escape_id(k) for k in keys]
    assert len(set(ids)) == len(keys)
    assert all(
        set(i) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        for i in ids
    )
    assert [unescape_id(i) for i in ids] == keys
    assert escape_id("telegram:12345") == "telegram_3a12345"


def test_a_missing_client_library_says_how_to_install_and_stays_missing() -> None:
    class NotebookUnavailable(ProviderUnavailable):
        pass

    library = ClientLibrary(
        ("chorus_no_such_module_here",),
        "the notebook provider needs notebook-client: pip install 'chorus[notebook]'",
        error=NotebookUnavailable,
    )
    assert library.installed() is False
    with pytest.raises(NotebookUnavailable, match=r"pip install 'chorus\[notebook\]'"):
        library.load()
    present = ClientLibrary(("json",), "never missing")
    assert present.installed() is True and present.load() is json

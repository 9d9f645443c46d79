"""RetainDB's published routes: the fake answers them (and 404s the invented ones), and
the provider speaks them: its project, a session handed over at its end, a refused write."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plugins.memory.retaindb import RetainDBProvider
from tests.fakes.retaindb_server import FakeRetainDB

ALICE, BOB, CHAT = "telegram:1", "telegram:2", "telegram#chat:-100"


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


def open_rdb(
    home: Path, rdb: FakeRetainDB, user_key: str = ALICE, **config: Any
) -> RetainDBProvider:
    provider = RetainDBProvider(environ={"RETAINDB_API_KEY": rdb.api_key})
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context="primary",
        config={"base_url": rdb.base_url, "timeout": 5.0, **config},
    )
    return provider


def test_the_invented_routes_are_404_and_the_published_ones_answer(rdb: FakeRetainDB) -> None:
    auth = {"Authorization": f"Bearer {rdb.api_key}"}
    with httpx.Client(base_url=rdb.base_url, headers=auth) as http:
        invented = [
            ("POST", "/v1/users/telegram%3A1/memories", {"content": "x"}),
            ("GET", "/v1/users/telegram%3A1/memories/search?q=x", None),
            ("DELETE", "/v1/users/telegram%3A1/memories/m1", None),
            ("PUT", "/v1/users/telegram%3A1/files/notes.md", {"content": "x"}),
            ("GET", "/v1/users/telegram%3A1/files/notes.md", None),
            ("GET", "/v1/users/telegram%3A1/files", None),
            ("GET", "/v1/health", None),
        ]
        for method, route, body in invented:
            assert http.request(method, route, json=body).status_code == 404, route
        scope = {"project": "default", "user_id": ALICE}
        stored = http.post("/v1/memory", json={**scope, "content": "I like figs."})
        assert stored.status_code == 201
        memory_id = stored.json()["memory"]["id"]
        found = http.post("/v1/memory/search", json={**scope, "query": "figs", "top_k": 3})
        assert [m["id"] for m in found.json()["results"]] == [memory_id]
        profile = http.get(f"/v1/memory/profile/{ALICE}", params={"project": "default"})
        assert [m["content"] for m in profile.json()["memories"]] == ["I like figs."]
        assert http.post("/v1/memory", json={"content": "no scope"}).status_code == 400
        assert http.delete(f"/v1/memory/{memory_id}").status_code == 200
        assert http.delete(f"/v1/memory/{memory_id}").status_code == 404
        upload = http.post(
            "/v1/files", files={"file": ("a.txt", b"hi", "text/plain")}, data={"path": "/a.txt"}
        )
        file_id = upload.json()["file"]["id"]
        assert http.get(f"/v1/files/{file_id}/content").content == b"hi"
    with httpx.Client(base_url=rdb.base_url, headers={"X-API-Key": rdb.api_key}) as keyed:
        assert keyed.post("/v1/memory/search", json={**scope, "query": "x"}).status_code == 200
        assert keyed.get("/v1/files").status_code == 401  # files take the bearer token only
    assert httpx.post(f"{rdb.base_url}/v1/memory", json=scope).status_code == 401


def test_a_write_answered_404_is_set_aside_with_a_warning(
    tmp_path: Path, rdb: FakeRetainDB, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    wrong = open_rdb(tmp_path, rdb, base_url=f"{rdb.base_url}/api")  # no RetainDB API there
    wrong.sync_turn("My PIN is 4321.", "Noted.")
    remembered = json.loads(wrong.handle_tool_call("retaindb_remember", {"content": "I like tea."}))
    assert remembered == {"success": False, "error": "RetainDB refused it (HTTP 404)"}
    assert wrong.queue is not None and wrong.queue.size() == 0
    assert wrong.queue.dead() == [("memory", "HTTP 404"), ("memory", "HTTP 404")]
    refused = [r for r in caplog.records if "dead letters" in r.getMessage()]
    assert len(refused) == 2 and all(r.levelno == logging.WARNING for r in refused)
    assert "base_url" in refused[0].getMessage() and "4321" not in caplog.text
    wrong.shutdown()


def test_the_project_setting(
    tmp_path: Path, rdb: FakeRetainDB, caplog: pytest.LogCaptureFixture
) -> None:
    team = open_rdb(tmp_path / "a", rdb, project="team-7")
    team.sync_turn("I fly kites.", "Fun.")
    assert team.prefetch("kites") != ""
    assert rdb.memories_of(ALICE, project="team-7") == ["User: I fly kites.\nAssistant: Fun."]
    assert rdb.memories_of(ALICE) == []
    profile = [r for r in rdb.requests if r[1] == f"/v1/memory/profile/{ALICE}"][-1]
    assert profile[2]["project"] == "team-7"
    team.shutdown()
    caplog.set_level(logging.WARNING)
    odd = open_rdb(tmp_path / "b", rdb, project="../other")
    assert odd.settings.project == "default"
    assert "memory.providers.retaindb.project" in caplog.text and "../other" not in caplog.text
    odd.shutdown()


def test_the_ended_session_is_handed_over_per_speaker(tmp_path: Path, rdb: FakeRetainDB) -> None:
    group = open_rdb(tmp_path, rdb, user_key=CHAT)
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "I keep bees.", "speaker": ALICE},
        {"role": "assistant", "content": "Nice, Alice."},
        {"role": "user", "content": [{"type": "text", "text": "I sail."}], "speaker": BOB},
        {"role": "tool", "content": "{}", "tool_call_id": "t1"},
        {"role": "assistant", "content": "Ahoy, Bob."},
    ]
    group.on_session_end(messages)
    group.on_session_end(messages)  # a re-delivered job: the queue row is the same
    assert [(s["user_id"], s["session_id"], s["messages"]) for s in rdb.sessions] == [
        (
            ALICE,
            "s1",
            [
                {"role": "user", "content": "I keep bees."},
                {"role": "assistant", "content": "Nice, Alice."},
            ],
        ),
        (
            BOB,
            "s1",
            [
                {"role": "user", "content": "I sail."},
                {"role": "assistant", "content": "Ahoy, Bob."},
            ],
        ),
    ]
    ingest = [r for r in rdb.requests if r[1] == "/v1/memory/ingest/session"]
    assert ingest[0][2]["project"] == "default" and ingest[0][2]["write_mode"] == "sync"
    group.shutdown()

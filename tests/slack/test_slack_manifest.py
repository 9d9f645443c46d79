"""The app manifests in deploy/slack/ ask Slack for what the adapter uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.adapters.slack import SlackSettings

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "slack").glob("manifest*.yaml"))
NEEDED_SCOPES = {
    "app_mentions:read",  # app_mention events
    "channels:history",  # message.channels and thread context
    "groups:history",
    "im:history",
    "mpim:history",
    "chat:write",  # answers and streamed edits
    "commands",  # /chorus
    "users:read",  # names (users.info)
    "files:read",  # images for vision models
    "files:write",  # /export's archive, uploaded into the direct chat
    "reactions:write",  # the busy indicator outside assistant threads
}
NEEDED_EVENTS = {
    "app_home_opened",  # the Home tab: /status and /help
    "app_mention",
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
}


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_there_is_one_manifest_per_mode() -> None:
    modes = {p.name: load(p)["settings"]["socket_mode_enabled"] for p in MANIFESTS}
    assert modes == {"manifest.yaml": True, "manifest-http.yaml": False}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_matches_the_adapter(path: Path) -> None:
    manifest = load(path)
    defaults = SlackSettings()
    [command] = manifest["features"]["slash_commands"]
    assert command["command"] == defaults.slash_command
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == NEEDED_SCOPES
    events = manifest["settings"]["event_subscriptions"]
    assert set(events["bot_events"]) == NEEDED_EVENTS
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert manifest["settings"]["interactivity"]["is_enabled"] is True  # review buttons
    if not manifest["settings"]["socket_mode_enabled"]:
        assert events["request_url"].endswith(defaults.events_path)
        interactivity = manifest["settings"]["interactivity"]["request_url"]
        assert interactivity.endswith(defaults.events_path)
        assert command["url"].endswith(defaults.commands_path)

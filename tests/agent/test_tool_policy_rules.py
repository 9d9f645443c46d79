"""``ToolPolicy.decide`` and the checks of ``tools.policy`` when the configuration is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.tools.policy import ChatPlace, ToolPolicy, ToolRule
from gateway.config import load_settings
from gateway.errors import ConfigError

GROUP = ChatPlace("-100500", direct=False)
DM = ChatPlace("42", direct=True)


def policy(*rules: dict[str, object]) -> ToolPolicy:
    return ToolPolicy([ToolRule.model_validate(rule) for rule in rules])


def test_defaults_keep_provider_tools_for_everyone_and_mcp_tools_for_admins() -> None:
    empty = ToolPolicy()
    assert empty.decide("telegram:1", "user", "telegram", GROUP, "fact_store").action == "allow"
    assert empty.decide("telegram:1", "user", "telegram", DM, "github__issues").action == "deny"
    admin = empty.decide("telegram:9", "admin", "telegram", GROUP, "github__issues")
    assert admin.action == "allow" and admin.source == "default"
    nobody = empty.decide(None, "user", "telegram", GROUP, "github__issues")
    assert nobody.action == "deny"


def test_first_matching_rule_wins_and_every_condition_must_match() -> None:
    rules = policy(
        {"people": ["Telegram:1"], "chats": ["dm"], "tools": ["github__*"], "action": "allow"},
        {"platforms": ["slack"], "roles": ["user"], "tools": ["github__*"], "action": "ask"},
        {"chats": [-100500], "action": "deny"},
        {"tools": "github__*", "action": "allow"},
    )
    decide = rules.decide
    assert decide("telegram:1", "user", "telegram", DM, "github__issues").rule == 1
    in_group = decide("telegram:1", "user", "telegram", GROUP, "github__issues")
    assert (in_group.action, in_group.rule) == ("deny", 3)  # chat ids as numbers are ids
    on_slack = decide("slack:U1", "user", "slack", ChatPlace("C1", False), "github__issues")
    assert (on_slack.action, on_slack.rule) == ("ask", 2)
    assert not on_slack.allowed
    elsewhere = decide("telegram:2", "user", "telegram", ChatPlace("-7", False), "github__pr")
    assert (elsewhere.action, elsewhere.rule) == ("allow", 4)
    qualified = policy({"chats": ["telegram:-100500"], "action": "deny"})
    assert qualified.decide("telegram:2", "admin", "telegram", GROUP, "fact_store").rule == 1
    assert qualified.decide("slack:2", "admin", "slack", GROUP, "fact_store").rule is None


def test_core_tools_are_never_governed() -> None:
    deny_all = policy({"action": "deny"})
    for core in ("memory", "session_search"):
        decision = deny_all.decide("telegram:1", "user", "telegram", GROUP, core)
        assert decision.allowed and decision.source == "core"
    assert deny_all.decide("telegram:1", "user", "telegram", GROUP, "fact_store").rule == 1


def test_rules_for_a_person_leave_out_those_naming_others() -> None:
    rules = policy(
        {"people": ["telegram:1"], "action": "allow"},
        {"roles": ["admin"], "action": "allow"},
        {"platforms": ["slack"], "action": "deny"},
        {"tools": ["x*"], "action": "deny"},
    )
    assert [n for n, _ in rules.rules_for("telegram:2", "user", "telegram")] == [4]
    assert rules.rules[0].describe() == "people telegram:1 → allow"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("- {tools: [memory], action: deny}", "always available"),
        ("- {people: [bob], action: deny}", "expected PLATFORM:ID"),
        ("- {people: ['telegram#chat:-1'], action: deny}", "not a person"),
        ("- {roles: [owner], action: deny}", "'admin' or 'user'"),
        ("- {tools: ['a b'], action: deny}", "not a tool name glob"),
        ("- {tools: [x], action: maybe}", "'allow', 'ask' or 'deny'"),
        ("- {tools: [x]}", "Field required"),
        ("- {tool: [x], action: deny}", "unknown setting"),
        ("- {chats: [''], action: deny}", "group or dm"),
    ],
)
def test_bad_rules_are_refused_naming_the_rule(tmp_path: Path, rule: str, message: str) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(f"tools:\n  policy:\n    - {{action: allow}}\n    {rule}\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(home, {"CHORUS_HOME": str(home)})
    assert "tools.policy.1" in str(raised.value) and message in str(raised.value)


def test_a_good_policy_loads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(
        "tools:\n  policy:\n    - {people: telegram:5, chats: [DM], tools: 'gh__*', action: ask}\n"
    )
    [rule] = load_settings(home, {"CHORUS_HOME": str(home)}).tools.policy
    assert (rule.people, rule.chats, rule.tools, rule.action) == (
        ("telegram:5",),
        ("dm",),
        ("gh__*",),
        "ask",
    )

"""What the tool policy costs a request: ``ToolGate.offer`` over a session's tools.

Run: uv run python bench/tool_policy.py [--requests 2000] [--rules 40] [--tools 60]

Every LLM request of a turn asks the tool policy which of the session's tools the
person may use (``agent.tools.policy.ToolGate.offer``, with the rules of
``tools.policy`` as the gateway's wiring builds them). A message with no tool call
makes one such request. Here: ``--rules`` rules (people, roles, platforms, chats
and tool globs, the last ones matching nobody, so every tool is checked against
all of them), ``--tools`` tools (MCP-style ``server__tool`` names), a person who is
not an admin in a group chat: the worst case of the first-match walk.

Goal (the performance issue's "no regression" list): ≤ 1 ms p50 a message.
Writes ``bench/results/tool_policy.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.context import SessionContext  # noqa: E402
from agent.tools.policy import ToolGate, ToolPolicy  # noqa: E402
from agent.tools.policy._rules import ToolRule  # noqa: E402
from memory.paths import ChatRef, UserKey  # noqa: E402

GOAL_MS = 1.0


def rules(count: int) -> list[ToolRule]:
    """``count`` rules of every kind; none matches the bench's person before the last."""
    made: list[ToolRule] = []
    for n in range(count - 1):
        kind = n % 4
        if kind == 0:
            made.append(ToolRule(people=(f"telegram:{1000 + n}",), tools=("*",), action="allow"))
        elif kind == 1:
            made.append(ToolRule(roles=("admin",), tools=(f"srv{n}__*",), action="allow"))
        elif kind == 2:
            made.append(ToolRule(platforms=("slack",), tools=("github__*",), action="deny"))
        else:
            made.append(ToolRule(chats=(f"telegram:-{n}",), tools=("*",), action="deny"))
    made.append(ToolRule(tools=("*",), action="allow"))  # the last one: everyone, everything
    return made


def catalog(count: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"server{n % 6}__tool_{n}",
                "description": "a tool",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for n in range(count)
    ]


def run(requests: int, rule_count: int, tool_count: int) -> dict[str, Any]:
    policy = ToolPolicy(rules(rule_count))
    session = SessionContext(
        session_id="s1",
        user_key=UserKey("telegram", "42"),
        chat=ChatRef("telegram", "-100"),
        is_direct=False,
    )
    gate = ToolGate(session, lambda: policy, lambda _: False)
    tools = catalog(tool_count)
    offered = gate.offer(tools, None)
    assert len(offered) == tool_count, "every tool is allowed by the last rule"
    spent: list[float] = []
    for _ in range(requests):
        started = time.perf_counter()
        gate.offer(tools, None)
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    p50 = spent[len(spent) // 2]
    return {
        "requests": requests,
        "rules": rule_count,
        "tools": tool_count,
        "mean_ms": round(statistics.fmean(spent), 4),
        "p50_ms": round(p50, 4),
        "p99_ms": round(spent[int(len(spent) * 0.99)], 4),
        "goal_ms": GOAL_MS,
        "met": p50 <= GOAL_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rules", type=int, default=40)
    parser.add_argument("--tools", type=int, default=60)
    args = parser.parse_args()
    report = run(args.requests, args.rules, args.tools)
    print("  ".join(f"{k}={v}" for k, v in report.items()))
    out = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results")) / "tool_policy.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

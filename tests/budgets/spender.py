"""A process that spends one person's budget through the LLM client until it is refused.

``python -m tests.budgets.spender HOME TASKS``: the environment names the LLM
endpoint, Redis and the budget. Once ready it writes ``HOME/ready-PID`` and
starts spending when ``HOME/go`` exists: one call, then ``HOME/spent-PID``, and
the rest once every ready process made its first (so each has spent, however
the machine schedules them, before they race for the rest). Prints how many
calls it made.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from agent.errors import BudgetExhausted
from agent.llm import LLMClient
from agent.usage import Charge
from gateway.budgets import open_meter
from gateway.config import load_settings

PERSON = "telegram:7"
REFUSALS_TO_STOP = 5
"""Refusals in a row (a hold of the other process may refuse a call for a moment)."""
MAX_CALLS = 200


async def spend(llm: LLMClient, counter: list[int]) -> None:
    refused = 0
    while refused < REFUSALS_TO_STOP and counter[0] < MAX_CALLS:
        try:
            await llm.complete(
                [{"role": "user", "content": "go"}], charge=Charge(PERSON, "s-spender")
            )
        except BudgetExhausted:
            refused += 1
            await asyncio.sleep(0.05)
            continue
        refused = 0
        counter[0] += 1


def _wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.01)


def _wait_for_all(home: Path, prefix: str, count: int) -> None:
    while len(list(home.glob(f"{prefix}-*"))) < count:
        time.sleep(0.01)


async def main(home: Path, tasks: int) -> None:
    settings = load_settings(home)
    meter = open_meter(lambda: settings, home / "state.db", is_admin=lambda _: False)
    llm = LLMClient(settings.llm, meter=meter)
    await meter.check(PERSON)  # connected, the counters started: then wait for the start
    llm.preconnect.warm()  # and the LLM client's connection open (as before a turn)
    await llm.preconnect.settled()
    (home / f"ready-{os.getpid()}").touch()
    await asyncio.to_thread(_wait_for, home / "go")
    processes = len(list(home.glob("ready-*")))
    await llm.complete([{"role": "user", "content": "go"}], charge=Charge(PERSON, "s-spender"))
    counter = [1]
    (home / f"spent-{os.getpid()}").touch()
    await asyncio.to_thread(_wait_for_all, home, "spent", processes)
    await asyncio.gather(*(spend(llm, counter) for _ in range(tasks)))
    await meter.aclose()
    await llm.aclose()
    print(counter[0])


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))

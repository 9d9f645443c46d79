"""A session counts as busy from the moment its worker takes a message, also while the
turn's agent is still being made (what ``chorus console`` waits on before it reads the
next line)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.runner.conftest import GatewayFactory
from tests.waiting import until

SLOW_TO_START = textwrap.dedent(
    """
    import time
    from memory.providers import MemoryProvider

    class SlowToStart(MemoryProvider):
        name = "slowstart"
        def is_available(self): return True
        def initialize(self, session_id, **kwargs): pass
        def get_tool_schemas(self): return []
        def system_prompt_block(self):
            time.sleep(1.0)  # read as the agent is made, off the event loop
            return ""
    """
)


async def test_a_session_is_busy_while_its_turn_is_prepared(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    plugin = chorus_home / "plugins" / "slowstart"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(SLOW_TO_START)
    gateway = await make_gateway(CHORUS_MEMORY__PROVIDER="slowstart")
    sessions = gateway.runner.sessions
    await gateway.say("hello", user="2")
    await until(
        lambda: sessions.sessions and not any(s.pending for s in sessions.sessions),
        what="the message taken by its session's worker",
    )
    assert not gateway.server.requests  # its agent is still being made
    assert not sessions.quiet
    assert (await gateway.adapter.pop(20)).text == "ok"
    await until(lambda: sessions.quiet, what="the session quiet after the answer")

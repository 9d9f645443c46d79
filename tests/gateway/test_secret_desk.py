"""``SecretDesk`` on its own: a waiting ``/secret set`` expires, and a failing database
means the message is not read at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from gateway.commands import CommandContext, CommandRegistry, SecretDesk
from gateway.commands._secrets import REQUEST_TTL
from gateway.events import InboundMessage
from memory.secrets import SecretKey, SecretStore
from tests.fakes.clock import FakeClock

KEY = SecretKey("desk-key-0123456789-abcdefghijklmnopq")


def _dm(text: str, message_id: str = "m1") -> InboundMessage:
    return InboundMessage("telegram", "42", "42", text, message_id, is_direct=True)


async def _ask(desk: SecretDesk, registry: CommandRegistry, name: str) -> str | None:
    command = registry.get("secret")
    assert command is not None
    services = cast(Any, None)  # /secret set uses none of them
    ctx = CommandContext(_dm(f"/secret set {name}"), "secret", f"set {name}", services, False)
    return await command.handler(ctx)


async def test_a_waiting_request_expires(tmp_path: Path) -> None:
    clock = FakeClock()
    with SecretStore(tmp_path / "state.db", KEY) as store:
        desk, registry = SecretDesk(store, clock), CommandRegistry()
        desk.register(registry)
        await _ask(desk, registry, "TOKEN")
        clock._now += REQUEST_TTL + 1
        assert await desk.capture(_dm("too-late-value", "m2")) is None  # an ordinary message
        assert store.names("telegram:42") == []

        await _ask(desk, registry, "TOKEN")
        clock._now += REQUEST_TTL - 1
        answer = await desk.capture(_dm("in-time-value", "m3"))
        assert answer is not None and answer.startswith("Saved TOKEN.")
        assert store.get("telegram:42", "TOKEN") == "in-time-value"


async def test_commands_pass_while_a_request_waits(tmp_path: Path) -> None:
    with SecretStore(tmp_path / "state.db", KEY) as store:
        desk, registry = SecretDesk(store, FakeClock()), CommandRegistry()
        desk.register(registry)
        await _ask(desk, registry, "TOKEN")
        assert await desk.capture(_dm("/secret list")) is None
        assert await desk.capture(_dm("/cancel")) is None
        assert store.waiting("telegram:42", now=0.0) is not None  # still waiting


async def test_a_failing_database_means_the_message_is_not_read(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / "state.db", KEY)
    desk = SecretDesk(store, FakeClock())
    store.close()  # every statement now fails
    answer = await desk.capture(_dm("maybe-a-secret"))
    assert answer is not None and "did not read it" in answer


async def test_no_look_up_while_no_request_waits(tmp_path: Path) -> None:
    """A direct message reads the requests once; after that, while no ``/secret set`` waits
    in this process, none is read. A request made (here, or before a restart) is seen."""
    clock = FakeClock()
    path = tmp_path / "state.db"
    looked: list[str] = []
    with SecretStore(path, KEY) as store:
        assert store._conn is not None
        store._conn.set_trace_callback(
            lambda sql: looked.append(sql) if "FROM secret_requests" in sql else None
        )
        desk, registry = SecretDesk(store, clock), CommandRegistry()
        desk.register(registry)
        assert await desk.capture(_dm("hello", "m1")) is None
        first = len(looked)
        assert first > 0  # learnt that nothing waits
        for n in range(5):
            assert await desk.capture(_dm(f"chat {n}", f"m{n + 2}")) is None
        assert len(looked) == first  # no look-up at all

        await _ask(desk, registry, "TOKEN")
        answer = await desk.capture(_dm("the-value", "m9"))
        assert answer is not None and answer.startswith("Saved TOKEN.")
        await _ask(desk, registry, "OTHER")  # left waiting across a restart
        store._conn.set_trace_callback(None)

    with SecretStore(path, KEY) as again:
        desk = SecretDesk(again, clock)
        answer = await desk.capture(_dm("other-value", "m10"))
        assert answer is not None and answer.startswith("Saved OTHER.")
        clock._now += REQUEST_TTL + 1  # every request has expired: no look-up from now on
        assert again.nothing_waiting(clock.time())

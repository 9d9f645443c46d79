"""What a dead owner left half done: which messages a turn answers, which answer is finished."""

from __future__ import annotations

from gateway.app._half_answers import HalfAnswers
from gateway.events import InboundMessage
from gateway.sessions._live import next_turn


def message(n: int, resume: tuple[str, ...] = ()) -> InboundMessage:
    return InboundMessage("telegram", "7", "7", f"m{n}", str(n), resume=resume)


def texts(batch: list[InboundMessage]) -> list[str]:
    return [m.text for m in batch]


def test_a_half_shown_answer_is_its_own_turn() -> None:
    pending = [message(1, ("900",)), message(2), message(3)]
    batch, rest = next_turn(pending)
    assert (texts(batch), texts(rest)) == (["m1"], ["m2", "m3"])
    batch, rest = next_turn(rest)
    assert (texts(batch), texts(rest)) == (["m2", "m3"], [])  # queued together: one turn


def test_messages_before_a_half_shown_answer_do_not_take_it_with_them() -> None:
    batch, rest = next_turn([message(1), message(2, ("900",)), message(3)])
    assert (texts(batch), texts(rest)) == (["m1"], ["m2", "m3"])


def test_one_half_answer_of_several_messages_is_finished_once() -> None:
    half = HalfAnswers()
    assert half.take("s", ("900",)) == ("900",)
    assert half.take("s", ("900",)) == ()  # the next message is answered anew
    assert half.take("other", ("900",)) == ("900",)
    assert half.take("s", ()) == ()


def test_one_noted_answer_of_several_messages_is_delivered_once() -> None:
    half = HalfAnswers()
    assert half.take("s", ("900",), "the answer") == ("900",)
    assert half.take("s", ("900",), "the answer") is None  # given already: only settled
    assert half.take("s", (), "sent anew") == ()
    assert half.take("s", (), "sent anew") is None


def test_it_forgets_the_oldest_sessions_first() -> None:
    half = HalfAnswers(keep=2)
    for key in ("a", "b", "c"):
        half.take(key, ("1",))
    assert half.take("a", ("1",)) == ("1",)  # forgotten
    assert half.take("c", ("1",)) == ()

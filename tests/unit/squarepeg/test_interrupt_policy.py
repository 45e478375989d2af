"""Which interrupt abandons a run's cleanup (issue 17, item 1): only a deliberate second Ctrl-C.

The same interrupt delivered twice (GNU timeout signals its child, then its process group; a CI
runner signals the whole group) must never leave a pod Running. Driven on a fake clock."""

from __future__ import annotations

import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pegboard.adapters.fakes import FakeClock
from pegboard.app.squarepeg.interrupts import (
    REPEAT_WINDOW_SECONDS,
    Abandoned,
    TwoStageInterrupt,
    abandons,
)


class Calls:
    def __init__(self) -> None:
        self.first = 0
        self.second = 0
        self.repeats: list[int] = []

    def on_repeat(self, signum: int) -> None:
        self.repeats.append(signum)

    def on_first(self) -> None:
        self.first += 1

    def on_second(self) -> None:
        self.second += 1


def policy(clock: FakeClock) -> tuple[TwoStageInterrupt, Calls]:
    calls = Calls()
    return (
        TwoStageInterrupt(
            on_first=calls.on_first,
            on_second=calls.on_second,
            on_repeat=calls.on_repeat,
            monotonic=clock.monotonic,
        ),
        calls,
    )


def test_a_repeat_within_the_window_is_the_same_interrupt() -> None:
    clock = FakeClock()
    interrupt, calls = policy(clock)
    interrupt.trigger(signal.SIGINT)
    for _ in range(3):  # timeout's child + group, and a wrapper forwarding it once more
        clock.advance(0.001)
        interrupt.trigger(signal.SIGINT)
    clock.advance(REPEAT_WINDOW_SECONDS - 0.004)
    interrupt.trigger(signal.SIGINT)  # still inside the window
    assert (calls.first, calls.second, interrupt.ignored) == (1, 0, 4)
    assert calls.repeats == [signal.SIGINT] * 4  # each one said
    assert interrupt.first.is_set()


def test_a_second_ctrl_c_after_the_window_abandons() -> None:
    clock = FakeClock()
    interrupt, calls = policy(clock)
    interrupt.trigger(signal.SIGINT)
    clock.advance(REPEAT_WINDOW_SECONDS)
    with pytest.raises(Abandoned):
        interrupt.trigger(signal.SIGINT)
    assert (calls.first, calls.second) == (1, 1)


def test_sigterm_never_abandons_however_late() -> None:
    clock = FakeClock()
    interrupt, calls = policy(clock)
    interrupt.trigger(signal.SIGTERM)
    for _ in range(5):
        clock.advance(60)
        interrupt.trigger(signal.SIGTERM)
    assert (calls.first, calls.second, interrupt.ignored) == (1, 0, 5)


def test_a_ctrl_c_after_a_sigterm_is_deliberate_once_the_window_passed() -> None:
    clock = FakeClock()
    interrupt, calls = policy(clock)
    interrupt.trigger(signal.SIGTERM)
    clock.advance(0.01)
    interrupt.trigger(signal.SIGINT)  # the same stop, delivered as both
    assert calls.second == 0
    clock.advance(REPEAT_WINDOW_SECONDS)
    with pytest.raises(Abandoned):
        interrupt.trigger(signal.SIGINT)


def test_after_the_run_no_signal_abandons() -> None:
    clock = FakeClock()
    interrupt, calls = policy(clock)
    interrupt.trigger(signal.SIGINT)
    interrupt.abandon_allowed = False
    clock.advance(10)
    interrupt.trigger(signal.SIGINT)
    assert calls.second == 0


@given(
    signum=st.sampled_from([signal.SIGINT, signal.SIGTERM]),
    since_first=st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
def test_only_a_late_sigint_abandons(signum: signal.Signals, since_first: float) -> None:
    assert abandons(signum, since_first=since_first) == (
        signum == signal.SIGINT and since_first >= REPEAT_WINDOW_SECONDS
    )

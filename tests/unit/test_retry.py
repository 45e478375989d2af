"""The one retry policy (domain/retry.py): bounded, exponential, capped, jitter passed in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.retry import Backoff, RetryBudget


def test_exponential_backoff_capped() -> None:
    policy = Backoff(first_delay=0.5, factor=2, max_delay=3, attempts_per_outage=5)
    budget = RetryBudget(policy)
    assert [budget.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 3.0, 3.0, None]


def test_budget_is_per_outage_and_resets_on_recovery() -> None:
    budget = RetryBudget(Backoff(first_delay=1, factor=2, attempts_per_outage=2))
    for _ in range(10):  # ten separate outages, each one recovered: never exhausted
        assert budget.next_delay() == 1
        assert budget.next_delay() == 2
        budget.recovered()
    assert budget.next_delay() == 1
    assert budget.next_delay() == 2
    assert budget.next_delay() is None


def test_jitter_is_passed_in_and_kept_within_the_cap() -> None:
    halved = Backoff(first_delay=1, factor=2, max_delay=4, jitter=lambda d: d / 2)
    assert [halved.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.0]
    wild = Backoff(first_delay=1, max_delay=4, jitter=lambda d: d * 10 - 100)
    assert wild.delay(1) == 0.0  # a jitter never makes a negative wait
    assert Backoff(max_delay=4, jitter=lambda d: d * 10).delay(5) == 4.0


@given(
    first=st.floats(0, 10),
    factor=st.floats(1, 4),
    cap=st.floats(0, 60),
    attempts=st.integers(0, 20),
    jitter=st.floats(0, 2),
)
def test_budget_bounds_every_outage(
    first: float, factor: float, cap: float, attempts: int, jitter: float
) -> None:
    policy = Backoff(first, factor, cap, attempts, jitter=lambda d: d * jitter)
    budget = RetryBudget(policy)
    delays = []
    while (delay := budget.next_delay()) is not None:
        delays.append(delay)
        assert len(delays) <= attempts
    assert len(delays) == attempts
    assert all(0.0 <= d <= cap for d in delays)
    budget.recovered()
    assert budget.next_delay() is not None or attempts == 0

from __future__ import annotations

from pegboard.domain.squarepeg.log_reconnect import ReconnectBudget, ReconnectPolicy


def test_exponential_backoff_capped() -> None:
    policy = ReconnectPolicy(first_delay=0.5, factor=2, max_delay=3, attempts_per_outage=5)
    budget = ReconnectBudget(policy)
    assert [budget.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 3.0, 3.0, None]


def test_budget_is_per_outage_and_resets_when_bytes_flow() -> None:
    budget = ReconnectBudget(ReconnectPolicy(first_delay=1, factor=2, attempts_per_outage=2))
    for _ in range(10):  # ten separate outages, each one recovered: never exhausted
        assert budget.next_delay() == 1
        assert budget.next_delay() == 2
        budget.bytes_flowed()
    assert budget.next_delay() == 1
    assert budget.next_delay() == 2
    assert budget.next_delay() is None

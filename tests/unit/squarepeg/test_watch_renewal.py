"""A failed pod watch is renewed by the one retry policy (WATCH_BACKOFF, a budget per outage)."""

from __future__ import annotations

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg import pod_watch
from pegboard.domain.errors import Transient
from pegboard.domain.retry import Backoff


@pytest.fixture(autouse=True)
def instant_renewals(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same budget without the wall-clock waits (the Timer runs in real time)."""
    fast = Backoff(first_delay=0.0, factor=1.0, max_delay=0.0, attempts_per_outage=3)
    monkeypatch.setattr(pod_watch, "WATCH_BACKOFF", fast)
    from pegboard.app.squarepeg import pod_attempt

    monkeypatch.setattr(pod_attempt, "WATCH_BACKOFF", fast)


def test_a_few_failed_watches_are_renewed_and_the_run_completes() -> None:
    cluster = FakeCluster(FakeClock())
    cluster.script_pod("p", PodScript.completes(b"ok\n", exit_code=3))
    cluster.fail_next("watch", Transient("watch dropped"), times=3)
    result = run_on_fake(resolved_run("p"), cluster)
    assert (result.code, result.error) == (3, None)
    assert result.stdout == b"ok\n"


def test_a_watch_that_keeps_failing_spends_the_budget_and_fails_the_run() -> None:
    cluster = FakeCluster(FakeClock())
    cluster.script_pod("p", PodScript.completes(b"ok\n"))
    cluster.fail_next("watch", Transient("watch dropped"), times=100)
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code is None and result.error is not None
    assert "lost the watch on the pod" in str(result.error)

"""The ready wait and the monitor wait by the one retry policy (pegboard.domain.retry.Backoff),
taken from Timing: no private doubling loops of their own (issue 8, item 5)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from helpers.gpujob_run import RunHarness
from pegboard.adapters.fakes import FakeClock
from pegboard.adapters.providers import discover_registry
from pegboard.adapters.yaml_documents import read_yaml_document
from pegboard.app.runpod_deploy.job_loading import load_job
from pegboard.app.runpod_deploy.phases import PodNeverReady, job_paths, monitor, wait_until_ready
from pegboard.app.runpod_deploy.run_types import MONITOR_RETRY, READY_POLL, PhaseFailed, Timing
from pegboard.domain.errors import Transient
from pegboard.domain.gpujob.plan import RunBudget
from pegboard.domain.ports.gpu_cloud import POD_STARTING, PodStatus
from pegboard.domain.retry import Backoff

UNUSUAL = Backoff(first_delay=0.3, factor=3.0, max_delay=2.7)


class _Unreachable:
    """A cloud and a shell that never answer: every call is a transient failure."""

    provider = "fake"

    def get_pod(self, pod_id: str) -> Any:
        raise Transient("status query refused")

    def follow(self, *args: Any, **kwargs: Any) -> Any:
        raise Transient("connection refused")

    def detached_status(self, **kwargs: Any) -> Any:
        raise Transient("connection refused")


def _ready_sleeps(timing: Timing, timeout: float) -> list[float]:
    clock = FakeClock()
    with pytest.raises(PhaseFailed, match="not ready after"):
        wait_until_ready(
            _Unreachable(),  # type: ignore[arg-type]
            "pod-1",
            open_shell=lambda status: pytest.fail("never ready"),
            clock=clock,
            timeout_sec=timeout,
            timing=timing,
        )
    return clock.sleeps


def test_the_ready_wait_polls_by_the_retry_policy() -> None:
    assert _ready_sleeps(Timing(), 20.0)[:6] == [READY_POLL.delay(n) for n in range(1, 7)]
    unusual = _ready_sleeps(Timing(ready_poll=UNUSUAL), 10.0)
    assert unusual[:4] == pytest.approx([0.3, 0.9, 2.7, 2.7])
    assert sum(unusual) == pytest.approx(10.0)  # the last sleep is cut at the deadline


def _monitor_sleeps(tmp_path: Path, timing: Timing) -> list[float]:
    h = RunHarness(tmp_path)
    job = load_job(
        config_path=h.config_path,
        read_document=read_yaml_document,
        providers=discover_registry(),
        cli_vars={},
        home=str(tmp_path / "home"),
        now=datetime(2026, 1, 1, tzinfo=UTC),
        unique_suffix="abcd",
    ).job
    clock = FakeClock()
    with pytest.raises(PhaseFailed, match="lost contact"):
        monitor(
            _Unreachable(),  # type: ignore[arg-type]
            job.run,
            job_paths(job.run),
            budget=RunBudget(
                started_at=0.0,
                cost_cap_usd=100.0,
                price_per_hour_usd=1.0,
                price_source="assumed_rate",
                max_runtime_sec=None,
            ),
            clock=clock,
            timing=timing,
            job_output=lambda _b: None,
            emit=lambda *a, **k: None,
        )
    return clock.sleeps


def test_the_monitor_retries_by_the_retry_policy(tmp_path: Path) -> None:
    sleeps = _monitor_sleeps(tmp_path / "a", Timing(lost_contact_after_sec=30.0))
    assert sleeps[:6] == [MONITOR_RETRY.delay(n) for n in range(1, 7)]
    unusual = _monitor_sleeps(
        tmp_path / "b", Timing(lost_contact_after_sec=10.0, monitor_retry=UNUSUAL)
    )
    assert unusual[:4] == pytest.approx([0.3, 0.9, 2.7, 2.7])


class _NeverStarts:
    """A pod whose provider knows it will never start (a Kubernetes image that cannot be pulled)."""

    provider = "fake"

    def get_pod(self, pod_id: str) -> Any:
        return PodStatus(
            pod_id=pod_id,
            name="n",
            desired_status=POD_STARTING,
            start_failure="container 'job' failed to start (ErrImagePull): not found",
        )


def test_a_pod_that_can_never_start_ends_the_ready_wait_at_once() -> None:
    clock = FakeClock()
    with pytest.raises(PodNeverReady, match=r"cannot start: .*ErrImagePull"):
        wait_until_ready(
            _NeverStarts(),  # type: ignore[arg-type]
            "pod-1",
            open_shell=lambda status: pytest.fail("never ready"),
            clock=clock,
            timeout_sec=900,
            timing=Timing(),
        )
    assert clock.sleeps == []  # no waiting out the timeout

"""Two-stage Ctrl-C on FakeCluster: real SIGINT/SIGTERM sent to this process mid-run."""

from __future__ import annotations

import os
import signal
import time

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.errors import Interrupted
from pegboard.domain.ports.cluster import ResourceKind


def send(sig: signal.Signals = signal.SIGINT) -> None:
    os.kill(os.getpid(), sig)


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


def silent_forever() -> PodScript:
    return PodScript().running(at=1).log(b"started\n", at=1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_first_interrupt_cleans_up_and_exits_130_quickly(
    cluster: FakeCluster, sig: signal.Signals
) -> None:
    cluster.script_pod("p", silent_forever().call(lambda: send(sig), at=5))
    before = signal.getsignal(signal.SIGINT)
    started = time.monotonic()
    result = run_on_fake(resolved_run("p"), cluster)
    assert time.monotonic() - started < 1.5
    assert isinstance(result.error, Interrupted)
    assert b"started\n".startswith(result.stdout)  # virtual time may outrun the reader
    assert "press Ctrl-C again to leave it running" not in result.stderr  # written to fd 2
    assert cluster.deletions == [("Pod", "default", "p", "Background")]
    assert [r.operation for r in cluster.requests][-2:] == ["list", "list"]  # swept
    assert signal.getsignal(signal.SIGINT) == before  # handlers restored


def test_first_interrupt_during_startup(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.pending().call(send, at=3))
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, Interrupted)
    assert "p" not in cluster


def test_second_interrupt_leaves_it_running_and_skips_the_sweep(cluster: FakeCluster) -> None:
    script = silent_forever().call(send, at=5)
    cluster.script_pod("p", script)
    real_delete = cluster.delete

    def slow_delete(*args: object, **kwargs: object) -> bool:
        send()  # the second Ctrl-C arrives while cleanup runs
        return real_delete(*args, **kwargs)  # type: ignore[arg-type]

    cluster.delete = slow_delete  # type: ignore[method-assign]
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, Interrupted)
    assert "left running" in str(result.error)
    assert "p" in cluster
    assert "list" not in [r.operation for r in cluster.requests]


def test_job_mode_interrupt_deletes_the_job(cluster: FakeCluster) -> None:
    cluster.script_pod("j", silent_forever().call(send, at=4))
    result = run_on_fake(resolved_run("j", kind=ResourceKind.JOB), cluster)
    assert isinstance(result.error, Interrupted)
    assert cluster.jobs == [] and cluster.pods == []

"""Two-stage Ctrl-C on FakeCluster: real SIGINT/SIGTERM sent to this process mid-run."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.errors import Forbidden, Interrupted
from pegboard.domain.ports.cluster import ResourceKind


def send(sig: signal.Signals = signal.SIGINT) -> None:
    os.kill(os.getpid(), sig)


@pytest.fixture(autouse=True)
def stray_signals_cannot_kill_the_worker() -> Iterator[None]:
    """While a test runs, SIGINT and SIGTERM outside the lifecycle's own handlers land here.

    The fake pod's scripted calls may send their signal from the log reader's thread a moment
    after the lifecycle has returned and restored the dispositions it found. Under load that
    stray signal would meet pytest's defaults: SIGTERM's SIG_DFL kills the xdist worker (and
    xdist then hangs, replacing it), SIGINT raises KeyboardInterrupt in another test."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in saved:
        signal.signal(sig, lambda *_: None)
    try:
        yield
    finally:
        time.sleep(0.05)  # let a signal still in flight from the reader thread arrive here
        for sig, handler in saved.items():
            signal.signal(sig, handler)


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
    assert [r.operation for r in cluster.requests][-2:] == ["list_page", "list_page"]  # swept
    assert signal.getsignal(signal.SIGINT) == before  # handlers restored


def test_first_interrupt_during_startup(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.pending().call(send, at=3))
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, Interrupted)
    assert "p" not in cluster


def test_second_interrupt_while_the_delete_is_in_flight_never_says_left_running(
    cluster: FakeCluster, capfd: pytest.CaptureFixture[str]
) -> None:
    cluster.script_pod("p", silent_forever().call(send, at=5))
    real_delete = cluster.delete

    def delete_then_interrupt(*args: object, **kwargs: object) -> bool:
        real_delete(*args, **kwargs)  # type: ignore[arg-type]
        send()  # the second Ctrl-C arrives before the DELETE's answer
        return True

    cluster.delete = delete_then_interrupt  # type: ignore[method-assign]
    result = run_on_fake(resolved_run("p"), cluster, interrupt_repeat_window=0.0)
    assert isinstance(result.error, Interrupted)
    assert str(result.error) == "interrupted while deleting pod p"
    said = capfd.readouterr().err
    assert "left running" not in said and "kubectl get pod p -n default" in said
    assert "p" not in cluster  # it really was deleted
    assert "list_page" not in [r.operation for r in cluster.requests]  # no sweep


def test_second_interrupt_during_the_sweep_says_the_pod_was_deleted(
    cluster: FakeCluster, capfd: pytest.CaptureFixture[str]
) -> None:
    cluster.script_pod("p", silent_forever().call(send, at=5))
    real_read = cluster.read

    def interrupted_read(*args: object, **kwargs: object) -> object:
        send()  # the sweep's first request (the Lease): the second Ctrl-C arrives
        return real_read(*args, **kwargs)  # type: ignore[arg-type]

    cluster.read = interrupted_read  # type: ignore[method-assign]
    result = run_on_fake(resolved_run("p"), cluster, interrupt_repeat_window=0.0)
    assert str(result.error) == "interrupted; pod p deleted"
    assert "was already deleted" in capfd.readouterr().err
    assert "p" not in cluster


def test_second_interrupt_after_a_failed_delete_says_left_running(
    cluster: FakeCluster, capfd: pytest.CaptureFixture[str]
) -> None:
    cluster.script_pod("p", silent_forever().call(send, at=5))
    cluster.fail_next("delete", Forbidden('pods "p" is forbidden', status=403))
    real_read = cluster.read

    def interrupted_read(*args: object, **kwargs: object) -> object:
        send()
        return real_read(*args, **kwargs)  # type: ignore[arg-type]

    cluster.read = interrupted_read  # type: ignore[method-assign]
    result = run_on_fake(resolved_run("p"), cluster, interrupt_repeat_window=0.0)
    assert str(result.error) == "interrupted; pod p left running"
    assert "kubectl delete pod p -n default" in capfd.readouterr().err
    assert "p" in cluster


@pytest.mark.parametrize(
    ("first", "again"),
    [
        (signal.SIGINT, signal.SIGINT),  # GNU timeout -s INT: the child, then its group
        (signal.SIGTERM, signal.SIGTERM),  # a CI runner signals the group, a wrapper forwards
        (signal.SIGINT, signal.SIGTERM),
    ],
)
def test_the_same_interrupt_delivered_twice_still_cleans_up(
    cluster: FakeCluster,
    capfd: pytest.CaptureFixture[str],
    first: signal.Signals,
    again: signal.Signals,
) -> None:
    real_delete = cluster.delete

    def twice() -> None:
        send(first)
        send(again)  # delivered while the first one's handler has already run

    def delete_then_repeat(*args: object, **kwargs: object) -> bool:
        send(again)  # a repeat in the middle of the cleanup changes nothing either
        return real_delete(*args, **kwargs)  # type: ignore[arg-type]

    cluster.script_pod("p", silent_forever().call(twice, at=5))
    cluster.delete = delete_then_repeat  # type: ignore[method-assign]
    result = run_on_fake(resolved_run("p"), cluster)
    assert str(result.error) == "interrupted"
    said = capfd.readouterr().err
    assert "left running" not in said and "still cleaning up" in said
    assert "p" not in cluster
    assert "list_page" in [r.operation for r in cluster.requests]  # and the sweep ran


def test_sigterm_never_abandons_the_cleanup(cluster: FakeCluster) -> None:
    real_delete = cluster.delete

    def delete_then_terminate(*args: object, **kwargs: object) -> bool:
        send(signal.SIGTERM)
        return real_delete(*args, **kwargs)  # type: ignore[arg-type]

    cluster.script_pod("p", silent_forever().call(send, at=5))
    cluster.delete = delete_then_terminate  # type: ignore[method-assign]
    # Even with no repeat window at all, a SIGTERM is never the deliberate second Ctrl-C.
    result = run_on_fake(resolved_run("p"), cluster, interrupt_repeat_window=0.0)
    assert str(result.error) == "interrupted"
    assert "p" not in cluster


def test_job_mode_interrupt_deletes_the_job(cluster: FakeCluster) -> None:
    cluster.script_pod("j", silent_forever().call(send, at=4))
    result = run_on_fake(resolved_run("j", kind=ResourceKind.JOB), cluster)
    assert isinstance(result.error, Interrupted)
    assert cluster.jobs == [] and cluster.pods == []

"""The runner's hold on its own resource: set at create, renewed, and what a sweep makes of it."""

from __future__ import annotations

import threading

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg.runner_heartbeat import RunnerHeartbeat
from pegboard.app.squarepeg.sweep import sweep_after_run
from pegboard.domain.errors import Forbidden
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.runner_heartbeat import (
    HOLD_SECONDS,
    RENEW_EVERY_SECONDS,
    alive_until_value,
    held_by_live_runner,
    runner_alive_until,
    with_runner_hold,
)


class Notices:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def step(self, text: str) -> None:
        self.lines.append(text)

    detail = warn = step


def manifest(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels.own_labels(run_id=f"run-{name}", created_by="jane", keep=False),
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "alpine", "command": ["true"]}],
        },
    }


def test_the_hold_outlasts_two_missed_renewals_and_then_runs_out() -> None:
    assert HOLD_SECONDS > 2 * RENEW_EVERY_SECONDS
    obj = with_runner_hold(manifest("p"), 1000.0)
    assert runner_alive_until(obj) == 1000.0 + HOLD_SECONDS
    assert held_by_live_runner(obj, now=1000.0 + HOLD_SECONDS - 1)
    assert not held_by_live_runner(obj, now=1000.0 + HOLD_SECONDS)
    assert alive_until_value(0.2, 1.0) == "1970-01-01T00:00:02Z"  # never earlier than promised


def test_renewals_keep_a_finished_pod_out_of_every_sweep_until_the_runner_stops() -> None:
    clock = FakeClock()
    cluster = FakeCluster(clock)
    cluster.script_pod("slow", PodScript.completes(b"big log"))
    cluster.create(with_runner_hold(manifest("slow"), clock.now()), namespace="default")
    cluster.advance(5)
    assert cluster.pod("slow")["status"]["phase"] == "Succeeded"
    stop = threading.Event()
    heartbeat = RunnerHeartbeat(
        cluster,
        clock,
        kind=ResourceKind.POD,
        name="slow",
        namespace="default",
        stop=stop,
        notice=pytest.fail,
    )
    notices = Notices()
    for _ in range(10):  # a reader slower than many holds: each renewal extends it
        cluster.advance(RENEW_EVERY_SECONDS)
        assert heartbeat.beat()
        report = sweep_after_run(
            cluster,
            clock,
            notices,
            namespace="default",
            created_by="jane",
            min_age_seconds=0,
            exclude_run_id="another-run",
        )
        assert report.decisions == () and "slow" in cluster
    # The runner dies (no more renewals): once the hold runs out, it is an ordinary orphan.
    cluster.advance(HOLD_SECONDS)
    report = sweep_after_run(
        cluster,
        clock,
        notices,
        namespace="default",
        created_by="jane",
        min_age_seconds=0,
        exclude_run_id="another-run",
    )
    assert [d.ref for d in report.decisions] == ["pod/slow"] and "slow" not in cluster
    assert not heartbeat.beat()  # nothing left to hold: the renewing thread ends


def test_no_right_to_patch_is_said_once_and_ends_the_renewals() -> None:
    clock = FakeClock()
    cluster = FakeCluster(clock)
    cluster.create(manifest("p"), namespace="default")
    told: list[str] = []
    heartbeat = RunnerHeartbeat(
        cluster,
        clock,
        kind=ResourceKind.POD,
        name="p",
        namespace="default",
        stop=threading.Event(),
        notice=told.append,
    )
    cluster.fail_next("patch", Forbidden('pods "p" is forbidden'), times=2)
    assert not heartbeat.beat()
    assert not heartbeat.beat()
    assert len(told) == 1 and "patch on pods and jobs" in told[0]


def test_a_run_creates_its_pod_already_held() -> None:
    cluster = FakeCluster(FakeClock())
    cluster.script_pod("p", PodScript.completes(b"out"))
    start = cluster.clock.now()
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == 0
    (create,) = [r for r in cluster.requests if r.operation == "create" and r.kind == "Pod"]
    until = runner_alive_until(create.params["body"])
    assert until is not None and until >= start + HOLD_SECONDS

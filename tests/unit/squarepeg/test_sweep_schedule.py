"""The paced orphan sweep on FakeCluster: one sweep per interval through the Lease, filtered and
paginated LISTs, a cap on deletes, and the fallbacks (a dead Lease holder, 403 on Leases)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from helpers.squarepeg_runs import own_labels, resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg.sweep import Turn, find_orphans, list_all, sweep_after_run
from pegboard.domain.errors import Forbidden
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.sweep_schedule import sweep_lease_name

NS = "default"
USER = "jane"


class Notices:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def step(self, text: str) -> None:
        self.lines.append(text)

    detail = warn = step


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


def pod(name: str, *, run_id: str | None = None, user: str = USER, **extra: Any) -> dict[str, Any]:
    labels = own_labels(run_id or f"old-{name}", user=user)
    labels.update(extra.pop("labels", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "alpine", "command": ["true"]}],
        },
    }


def orphans(cluster: FakeCluster, count: int, prefix: str = "old") -> list[str]:
    names = [f"{prefix}-{i:04d}" for i in range(count)]
    for name in names:
        cluster.script_pod(name, PodScript.completes())
        cluster.create(pod(name), namespace=NS)
    cluster.advance(3600)
    return names


def sweep(cluster: FakeCluster, run_id: str, **options: Any) -> Any:
    notices = Notices()
    report = sweep_after_run(
        cluster,
        cluster.clock,
        notices,
        namespace=NS,
        created_by=USER,
        min_age_seconds=options.pop("min_age", 300),
        exclude_run_id=run_id,
        interval_seconds=options.pop("interval_seconds", 60),
        holder=run_id,
        **options,
    )
    return report, notices


def test_one_sweep_per_interval_across_runners(cluster: FakeCluster) -> None:
    orphans(cluster, 3)
    first, _ = sweep(cluster, "run-1", min_age=0)
    assert first.turn is Turn.SWEEP and first.deleted == 3
    cluster.script_pod("late", PodScript.completes())
    cluster.create(pod("late"), namespace=NS)
    cluster.advance(30)  # a finished orphan, but the Lease says: swept 30 s ago
    before = len(cluster.requests)
    second, _ = sweep(cluster, "run-2", min_age=0)
    assert second.turn is Turn.NOT_DUE and second.results == ()
    assert [r.operation for r in cluster.requests[before:]] == ["read"]  # one GET, no LIST
    cluster.advance(30)  # the interval is over: the next runner takes the Lease and sweeps
    third, _ = sweep(cluster, "run-3", min_age=0)
    assert third.turn is Turn.SWEEP and [d.name for d in third.decisions] == ["late"]
    lease = cluster.read(ResourceKind.LEASE, sweep_lease_name(USER), namespace=NS)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "run-3"
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_lease_held_by_a_runner_that_died_expires_and_another_sweeps(
    cluster: FakeCluster,
) -> None:
    orphans(cluster, 2)
    # A runner took the Lease, then died before sweeping anything.
    cluster.fail_next("list_page", ConnectionResetError("killed"), times=1)
    with pytest.raises(ConnectionResetError):
        sweep(cluster, "dead-run")
    assert not sweep(cluster, "run-2")[0].results  # within its interval: nobody sweeps
    cluster.advance(60)
    report, _ = sweep(cluster, "run-3")
    assert report.turn is Turn.SWEEP and report.deleted == 2


def test_forbidden_leases_fall_back_to_a_random_schedule_and_say_so(
    cluster: FakeCluster,
) -> None:
    orphans(cluster, 1)
    cluster.fail_next("read", Forbidden("leases is forbidden", status=403), times=100)
    turns = []
    for i in range(40):
        report, notices = sweep(cluster, f"run-{i}", rng=random.Random(i))
        turns.append(report.turn)
        assert notices.lines[0].startswith(
            f"orphan sweep: cannot use Lease {sweep_lease_name(USER)}"
        )
        assert "leases.coordination.k8s.io" in notices.lines[0]
    assert set(turns) == {Turn.RANDOM_SWEEP, Turn.RANDOM_SKIP}
    assert 2 <= turns.count(Turn.RANDOM_SWEEP) <= 16  # about 1 in 5
    assert "old-0000" not in cluster


def test_a_run_with_forbidden_leases_still_succeeds(cluster: FakeCluster) -> None:
    cluster.fail_next("read", Forbidden("leases is forbidden", status=403), times=100)
    cluster.script_pod("p", PodScript.completes(b"out"))
    result = run_on_fake(resolved_run("p"), cluster)
    assert (result.code, result.error, result.stdout) == (0, None, b"out")
    assert "cannot use Lease" in result.stderr


def test_deletes_are_capped_and_the_rest_waits_for_the_next_sweep(cluster: FakeCluster) -> None:
    names = orphans(cluster, 30)
    report, notices = sweep(cluster, "run-1", max_deletes=12, rng=random.Random(7))
    assert len(report.results) == 12 and report.left_for_next == 18
    assert any("18 more orphan(s) left for the next sweep" in line for line in notices.lines)
    chosen = [d.name for d in report.decisions]
    assert chosen != sorted(chosen)  # a random order: overlapping sweeps rarely collide
    cluster.advance(60)
    second, _ = sweep(cluster, "run-2", max_deletes=12, rng=random.Random(8))
    assert not set(chosen) & {d.name for d in second.decisions}
    assert len(cluster.deletions) == 24
    assert {p["metadata"]["name"] for p in cluster.pods} < set(names)


def test_the_sweeps_lists_are_filtered_on_the_server_and_ask_the_watch_cache(
    cluster: FakeCluster,
) -> None:
    orphans(cluster, 2)
    cluster.script_pod("running", PodScript().running(at=0.5))
    cluster.create(pod("running"), namespace=NS)
    cluster.create(pod("theirs", user="bob"), namespace=NS)
    cluster.create(pod("job-pod", labels={"job-name": "some-job"}), namespace=NS)
    cluster.advance(10)
    before = len(cluster.requests)
    found = find_orphans(
        cluster,
        namespace=NS,
        created_by=USER,
        now=cluster.clock.now(),
        min_age_seconds=300,
        exclude_run_id="run-1",
        from_cache=True,
    )
    assert sorted(d.name for d in found) == ["old-0000", "old-0001"]
    lists = [r for r in cluster.requests[before:] if r.operation == "list_page"]
    assert [r.kind for r in lists] == ["Pod", "Job"]
    pods = lists[0].params
    assert pods["label_selector"].endswith(",!squarepeg.io/keep,!job-name")
    assert "squarepeg.io/created-by=jane" in pods["label_selector"]
    assert pods["field_selector"] == "status.phase!=Running"
    assert (pods["resource_version"], pods["resource_version_match"]) == ("0", "NotOlderThan")
    returned = list_all(
        cluster,
        ResourceKind.POD,
        namespace=NS,
        label_selector=pods["label_selector"],
        field_selector=pods["field_selector"],
        from_cache=True,
    )
    # What the server returns: no Running pod, no Job's pod, nothing of another user.
    assert sorted(p["metadata"]["name"] for p in returned) == ["old-0000", "old-0001"]


def test_clean_reads_every_page_from_etcd(cluster: FakeCluster) -> None:
    orphans(cluster, 7)
    before = len(cluster.requests)
    found = find_orphans(
        cluster,
        namespace=NS,
        created_by=USER,
        now=cluster.clock.now(),
        min_age_seconds=0,
        exclude_run_id=None,
    )
    assert len(found) == 7
    pages = [r.params for r in cluster.requests[before:] if r.operation == "list_page"]
    assert all(p["resource_version"] is None for p in pages)
    assert all(p["limit"] == 500 for p in pages)
    small = list_all(
        cluster,
        ResourceKind.POD,
        namespace=NS,
        label_selector="app.kubernetes.io/managed-by=squarepeg",
        from_cache=False,
        page_size=3,
    )
    assert len(small) == 7
    assert sum(1 for r in cluster.requests if r.params.get("limit") == 3) == 3


def test_a_stuck_job_is_judged_by_its_pending_pod(cluster: FakeCluster) -> None:
    job = resolved_run("stuck-job", kind=ResourceKind.JOB, run_id="old-job").manifest
    cluster.script_pod(
        "stuck-job", PodScript().waiting("ImagePullBackOff", "Back-off pulling image")
    )
    cluster.create(job, namespace=NS)
    cluster.advance(3600)
    before = len(cluster.requests)
    report, _ = sweep(cluster, "run-1", interval_seconds=0)
    assert [d.ref for d in report.decisions] == ["job/stuck-job"]
    lists = [r.params for r in cluster.requests[before:] if r.operation == "list_page"]
    assert lists[-1]["label_selector"].endswith("job-name in (stuck-job)")
    assert lists[-1]["field_selector"] == "status.phase=Pending"

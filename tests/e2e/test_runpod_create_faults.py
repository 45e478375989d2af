"""`runpod-deploy run` against the RunPod API sandbox when create answers 5xx after the pod
exists and the lookup by name fails too (issue 17 item 3): never a second create while the
first one's outcome is unknown, and after every run every pod the sandbox holds is deleted, or
named in the manifest and listed by `ls-stale` with a release command that works."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from helpers.runpod_cloud_deploy import CloudDeploy, manifest_of
from pegboard.adapters.sandboxes.runpod import StockOut

A4000, A4500 = "NVIDIA RTX A4000", "NVIDIA RTX A4500"
POD = {
    "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
    "datacenters": ["EU-RO-1", "US-TX-3"],
    "gpu_order": [A4000, A4500],
}
# The listing the lookup by name reads: GraphQL's `myself { pods }`, or REST v2's listPods
# (whichever the adapter speaks). The adapter retries each lookup 3 times, so 7 failures
# outlast two whole lookups.
LISTINGS = ("myself", "listPods")


def _fail_listings(deploy: CloudDeploy, times: int) -> None:
    for operation in LISTINGS:
        deploy.sandbox.faults.http_503[operation] = times


def _listing_failures_used(deploy: CloudDeploy, times: int) -> int:
    return max(times - deploy.sandbox.faults.http_503.get(op, 0) for op in LISTINGS)


def test_a_5xx_with_a_failing_lookup_finds_the_pod_and_creates_no_second(tmp_path: Path) -> None:
    deploy = CloudDeploy(tmp_path)
    try:
        deploy.sandbox.faults.create_5xx_after_pod_exists = 1
        _fail_listings(deploy, 7)
        done = deploy.run(deploy.config("hello", pod=POD))
        stderr = done.stderr.decode()
        assert done.returncode == 0, stderr[-3000:]
        assert _listing_failures_used(deploy, 7) == 7  # the lookups did fail
        (pod_id,) = deploy.terminated()  # one pod, adopted, used and deleted
        assert deploy.live_pods() == {}
        manifest = manifest_of(done)
        assert manifest["pod_id"] == pod_id and manifest["pods_created"] == [pod_id]
        assert "left behind" not in stderr
        listing = deploy.stale()
        assert listing["pods"] == [] and listing["dangling_pointers"] == []
    finally:
        deploy.close()


def _check_every_pod_accounted_for(deploy: CloudDeploy, manifest: dict[str, Any]) -> None:
    live = deploy.live_pods()
    named = set(manifest["pods_created"]) | {manifest["pod_id"]}
    pods = {pod.id: pod for pod in deploy.sandbox.pods()}
    for pod_id in live:
        by_name = pods[pod_id].name == manifest["pod_name"] and manifest["pod_name"] in (
            manifest["left_behind"] or ""
        )
        assert pod_id in named or by_name, (pod_id, manifest)
    listed = deploy.stale_pods()
    assert set(live) <= set(listed)
    for pod_id in live:
        released = deploy.shell_command(listed[pod_id]["release"])
        assert released.returncode == 0, released.stderr.decode()[-2000:]
    assert deploy.live_pods() == {}


@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example is a real run
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    stock_outs=st.integers(0, 2),
    create_5xx=st.integers(0, 2),
    listing_503=st.integers(0, 8),
    on_success=st.sampled_from(["delete", "stop"]),
)
def test_random_create_faults_leave_every_pod_deleted_or_named_and_releasable(
    stock_outs: int, create_5xx: int, listing_503: int, on_success: str
) -> None:
    with tempfile.TemporaryDirectory() as root:
        deploy = CloudDeploy(Path(root))
        try:
            faults = deploy.sandbox.faults
            if stock_outs:
                faults.stock_out_at_create.append(StockOut(A4000, times=stock_outs))
            faults.create_5xx_after_pod_exists = create_5xx
            if listing_503:
                _fail_listings(deploy, listing_503)
            lifecycle = {"on_success": on_success, "on_failure": "stop"}
            done = deploy.run(deploy.config("hello", pod=POD, lifecycle=lifecycle))
            manifest = manifest_of(done)
            assert done.returncode in (0, 1), done.stderr.decode()[-3000:]
            faults.http_503.clear()  # the API is healthy again for ls-stale and the releases
            if done.returncode == 0:
                live = set(deploy.live_pods())
                assert live == ({manifest["pod_id"]} if on_success == "stop" else set())
            _check_every_pod_accounted_for(deploy, manifest)
        finally:
            deploy.close()

"""`runpod-deploy run` on its default provider against the RunPod API sandbox's fault knobs, and
SIGKILLed at every phase: no pod is ever left that is neither deleted nor listed by `ls-stale`
with the command that releases it.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.deploy_cli import KILL_TEST_CHANGES, kill_point_batches
from helpers.runpod_cloud_deploy import CloudDeploy, manifest_of, run_dir_of
from pegboard.adapters.sandboxes.runpod import StockOut

A4000, A4500 = "NVIDIA RTX A4000", "NVIDIA RTX A4500"
POD = {
    "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
    "datacenters": ["EU-RO-1", "US-TX-3"],
    "gpu_order": [A4000, A4500],
}


@pytest.fixture
def deploy(tmp_path: Path) -> Iterator[CloudDeploy]:
    deploy = CloudDeploy(tmp_path)
    try:
        yield deploy
    finally:
        deploy.close()


def _events(done: object) -> list[dict[str, object]]:
    path = run_dir_of(done) / "events.jsonl"  # type: ignore[arg-type]
    return [json.loads(line) for line in path.open()]


def test_a_stock_out_at_create_walks_to_the_next_candidate(deploy: CloudDeploy) -> None:
    deploy.sandbox.faults.stock_out_at_create.append(StockOut(A4000, times=2))
    done = deploy.run(deploy.config("hello", pod=POD))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    manifest = manifest_of(done)
    assert (manifest["gpu_id"], manifest["datacenter_id"]) == (A4500, "EU-RO-1")
    failovers = [e for e in _events(done) if e["event"] == "datacenter_failover"]
    assert [(e["from_gpu_id"], e["from"]) for e in failovers] == [
        (A4000, "EU-RO-1"),
        (A4000, "US-TX-3"),
    ]
    assert deploy.live_pods() == {} and len(deploy.terminated()) == 1  # one pod, deleted


def test_a_stock_out_everywhere_fails_with_no_pod_and_no_pointer(deploy: CloudDeploy) -> None:
    deploy.sandbox.faults.stock_out_at_create.append(StockOut(times=4))
    done = deploy.run(deploy.config("hello", pod=POD))
    assert done.returncode == 1
    assert "every candidate" in manifest_of(done)["failure_reason"]
    assert deploy.sandbox.pods() == []
    listing = deploy.stale()
    assert listing["pods"] == [] and listing["dangling_pointers"] == []  # no pointer left


def test_a_5xx_after_the_pod_exists_adopts_it_by_name(deploy: CloudDeploy) -> None:
    deploy.sandbox.faults.create_5xx_after_pod_exists = 1
    done = deploy.run(deploy.config("hello", pod=POD))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert deploy.live_pods() == {} and len(deploy.terminated()) == 1  # adopted, not twice
    assert "looking it up by name" in done.stderr.decode()


def test_a_5xx_after_the_pod_exists_then_sigkill_leaves_it_listed(deploy: CloudDeploy) -> None:
    deploy.sandbox.faults.create_5xx_after_pod_exists = 1
    deploy.kill_at(deploy.config("hello", pod=POD), "after-create")
    ((pod_id, _),) = deploy.live_pods().items()
    listed = deploy.stale_pods()
    assert pod_id in listed and f"--pod-id {pod_id}" in listed[pod_id]["release"]
    assert deploy.shell_command(listed[pod_id]["release"]).returncode == 0
    assert deploy.live_pods() == {}


def test_ssh_never_ready_deletes_the_pod(deploy: CloudDeploy) -> None:
    deploy.sandbox.faults.ssh_never_ready = True
    config = deploy.config("hello", lifecycle={"on_success": "delete", "on_failure": "stop"})
    done = deploy.run(config, "--ssh-ready-timeout-sec", "3")
    assert done.returncode == 1
    manifest = manifest_of(done)
    assert (
        manifest["failure_phase"] == "ready" and "not ready after 3s" in manifest["failure_reason"]
    )
    assert manifest["lifecycle_action"] == "delete"
    assert deploy.live_pods() == {} and len(deploy.terminated()) == 1
    listing = deploy.stale()
    assert listing["pods"] == [] and listing["dangling_pointers"] == []


def test_a_slow_pod_is_waited_for(deploy: CloudDeploy) -> None:
    deploy.sandbox.faults.ssh_ready_delay_sec = 2.0
    done = deploy.run(deploy.config("hello"))
    assert done.returncode == 0, done.stderr.decode()[-3000:]


def test_resume_without_a_free_gpu_falls_back_to_a_fresh_pod(deploy: CloudDeploy) -> None:
    config = deploy.config("hello", lifecycle={"on_success": "recycle", "on_failure": "stop"})
    first = deploy.run(config)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    ((old, _),) = deploy.live_pods().items()
    deploy.sandbox.faults.resume_without_free_gpus = 1
    second = deploy.run(config)
    assert second.returncode == 0, second.stderr.decode()[-3000:]
    assert "no free GPU" in second.stderr.decode() or "not enough free GPUs" in (
        second.stderr.decode()
    )
    live = deploy.live_pods()
    assert old not in live  # the stuck pod was deleted, not left billing for its disk
    ((fresh, status),) = live.items()
    assert fresh != old and status == "EXITED"
    (listed,) = deploy.stale()["pods"]
    assert listed["pod_id"] == fresh
    assert deploy.shell_command(listed["release"]).returncode == 0


# One run killed at each boundary, five at a time: each batch a test of its own (xdist spreads
# them), every point in one of them.
@pytest.mark.parametrize("points", kill_point_batches(5))
def test_sigkill_at_every_phase_leaves_every_pod_deleted_or_listed_with_its_release(
    deploy: CloudDeploy, points: tuple[str, ...]
) -> None:
    config = deploy.config("hello", **KILL_TEST_CHANGES)
    killed: dict[str, bytes] = {}  # point -> what the killed run printed (RUN_DIR=...)
    procs = {point: deploy.start(config, stop_at=point) for point in points}
    for point, proc in procs.items():
        deploy.wait_for_point(proc, point)
    for point, proc in procs.items():
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        assert proc.returncode == -signal.SIGKILL, point
        killed[point] = out
    # Each run's pod, found by its unique name (the run id its pointer records).
    by_name = {pod.name: pod.id for pod in deploy.sandbox.pods() if pod.status != "TERMINATED"}
    left: dict[str, str] = {}  # pod id -> the point its run was killed at
    for point, out in killed.items():
        stamp = out.split(b"\n", 1)[0].decode().rsplit("/", 1)[-1]
        pointer = deploy.home / ".local" / "state" / "runpod-deploy" / "runs" / f"{stamp}.json"
        name = json.loads(pointer.read_text())["pod_name"] if pointer.exists() else None
        if name in by_name:
            left[by_name[name]] = point
        if point in ("enter-ready", "enter-monitor", "enter-lifecycle"):
            assert name in by_name, point  # the pod was there when the run died
        if point in ("enter-provision", "before-create", "after-lifecycle", "enter-manifest"):
            assert name not in by_name, point
    assert set(deploy.live_pods()) == set(left)  # no pod that no run's pointer names
    # One listing: every pod left is there, each with the command that releases exactly it.
    listed = deploy.stale_pods()
    assert set(left) <= set(listed)
    releases = {pod_id: listed[pod_id]["release"] for pod_id in left}
    for pod_id, release in releases.items():
        assert f"--pod-id {pod_id}" in release, (left[pod_id], release)
    for pod_id, done in zip(releases, deploy.shell_commands(list(releases.values())), strict=True):
        assert done.returncode == 0, (left[pod_id], done.stderr.decode())
    assert deploy.live_pods() == {}

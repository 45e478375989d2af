"""`runpod-deploy` on its default provider, end to end: the installed CLI as a subprocess against
the RunPod API sandbox (REST v2; GraphQL only for spot), paramiko and rsync over each pod's sshd.

The examples/runpod configs run unchanged (their `/workspace` is each pod's own volume). Each
lifecycle action, `recycle` resumed by a second run, spot, a network volume, and the audit
commands afterwards (ls-stale, logs, cleanup, the GPU commands, validate, a read-only dry run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.runpod_cloud_deploy import CloudDeploy, manifest_of, run_dir_of

GRAPHQL_MUTATIONS = ("podFindAndDeployOnDemand", "podRentInterruptable", "podStop", "podResume")


@pytest.fixture
def deploy(tmp_path: Path) -> Iterator[CloudDeploy]:
    deploy = CloudDeploy(tmp_path)
    try:
        yield deploy
    finally:
        deploy.close()


def _lifecycle(on_success: str) -> dict[str, str]:
    return {"on_success": on_success, "on_failure": "stop"}


def _mutations(deploy: CloudDeploy) -> list[str]:
    """Every request that changes something: v2 as `operationId body`, GraphQL as its text."""
    v2 = [
        f"{r.operation_id} {r.body.decode()}"
        for r in deploy.sandbox.received_v2
        if not r.target.startswith("/v2/") or r.method != "GET"
    ]
    graphql = [
        q.text
        for q in deploy.sandbox.received
        if any(m in q.text for m in (*GRAPHQL_MUTATIONS, "podTerminate"))
    ]
    return v2 + graphql


def test_hello_example_runs_unchanged_on_the_default_provider(deploy: CloudDeploy) -> None:
    done = deploy.run(deploy.project / "hello.yaml")
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert b"[hello] DONE" in done.stdout
    manifest = manifest_of(done)
    assert manifest["outcome"] == "succeeded"
    assert manifest["gpu_id"] == "NVIDIA RTX A4000" and manifest["datacenter_id"] == "EU-RO-1"
    assert manifest["gpu_price_source"] == "pod_describe"
    assert manifest["gpu_price_per_hour_usd"] == pytest.approx(0.25)
    assert manifest["pod_final_state"] == "TERMINATED"
    assert deploy.live_pods() == {} and len(deploy.terminated()) == 1
    # The pod trusted nothing but the PUBLIC_KEY the run passed: logging in proves it.
    (create,) = [q for q in _mutations(deploy) if q.startswith("createPod ")]
    assert json.loads(create.split(" ", 1)[1])["env"]["PUBLIC_KEY"] == deploy.public_key.strip()
    # A whole run on the default provider, without spot, sends no GraphQL request at all.
    assert deploy.sandbox.received == []
    assert (run_dir_of(done) / "hello.log").read_bytes().endswith(b"[hello] DONE\n")
    assert (run_dir_of(done) / "pip_freeze.txt").exists()
    assert deploy.stale()["pods"] == []
    assert not (deploy.home / ".runpod-hello-current").exists()


@pytest.mark.parametrize(
    ("action", "status"), [("stop", "EXITED"), ("preserve", "RUNNING"), ("recycle", "EXITED")]
)
def test_each_kept_pod_is_listed_and_released_by_its_command(
    deploy: CloudDeploy, action: str, status: str
) -> None:
    config = deploy.config("hello", lifecycle=_lifecycle(action))
    done = deploy.run(config)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    ((pod_id, now),) = deploy.live_pods().items()
    assert now == status
    manifest = manifest_of(done)
    assert manifest["lifecycle_action"] == action and pod_id in manifest["left_behind"]
    assert "runpod-deploy ls-stale" in done.stderr.decode()
    if action == "preserve":  # still running: `logs` reads the job log over SSH
        logs = deploy.cli("logs", "--config", str(config), "--no-follow")
        assert logs.returncode == 0, logs.stderr.decode()
        assert logs.stdout.endswith(b"[hello] DONE\n")
    listed = deploy.stale_pods()
    assert listed[pod_id]["status"] == status
    released = deploy.shell_command(listed[pod_id]["release"])
    assert released.returncode == 0, released.stderr.decode()
    assert deploy.live_pods() == {}


def test_recycle_resumes_the_same_pod_on_the_second_run(deploy: CloudDeploy) -> None:
    config = deploy.config("hello", lifecycle=_lifecycle("recycle"))
    first = deploy.run(config)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    ((pod_id, status),) = deploy.live_pods().items()
    assert status == "EXITED"
    # Something the first run left on the pod's volume is still there for the second.
    marker = deploy.sandbox.volume_dir(pod_id) / "from-the-first-run"
    marker.write_text("kept")
    second = deploy.run(config)
    assert second.returncode == 0, second.stderr.decode()[-3000:]
    assert deploy.live_pods() == {pod_id: "EXITED"}  # resumed, ran, stopped again
    events = [json.loads(line) for line in (run_dir_of(second) / "events.jsonl").open()]
    assert any(e["event"] == "pod_resumed" and e["pod_id"] == pod_id for e in events)
    assert marker.read_text() == "kept"
    assert sum(q == 'podAction {"action": "start"}' for q in _mutations(deploy)) == 1
    assert deploy.sandbox.received == []  # recycle, both runs: no GraphQL
    # Only one pod listed, released by the command printed for it.
    (listed,) = deploy.stale()["pods"]
    assert deploy.shell_command(listed["release"]).returncode == 0
    assert deploy.live_pods() == {}


def test_spot_pods_are_rented_interruptible(deploy: CloudDeploy) -> None:
    config = deploy.config(
        "hello",
        pod={
            "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
            "datacenters": ["EU-RO-1"],
            "gpu_order": ["NVIDIA RTX A4000"],
            "spot": True,
        },
    )
    done = deploy.run(config)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert deploy.live_pods() == {} and len(deploy.terminated()) == 1
    assert any("podRentInterruptable" in q for q in _mutations(deploy))
    # GraphQL only for the spot part: its prices, the bid, the rent; everything else is v2.
    assert all(
        "gpuTypes" in q.text or "podRentInterruptable" in q.text for q in deploy.sandbox.received
    )
    assert "pod.spot: a spot (interruptible) pod needs RunPod's GraphQL API" in done.stderr.decode()
    assert manifest_of(done)["gpu_price_per_hour_usd"] == pytest.approx(
        0.12
    )  # half the 0.25 on-demand price


def test_a_network_volume_is_attached_and_pins_the_datacenter(deploy: CloudDeploy) -> None:
    config = deploy.config(
        "hello",
        pod={
            "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
            "datacenters": ["US-TX-3", "EU-RO-1"],
            "gpu_order": ["NVIDIA RTX A4000"],
        },
        storage={"mode": "network_volume", "volume_name": "pid-workspace-100gb"},
        lifecycle=_lifecycle("stop"),
        run={
            "script_path": "/workspace/hello.sh",
            "log_path": "/workspace/hello.log",
            "success_marker": "[hello] DONE",
            "body": "echo kept > /workspace/on-the-volume.txt\necho '[hello] DONE'\n",
        },
    )
    done = deploy.run(config)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    (pod,) = deploy.sandbox.pods()
    (volume,) = [
        v for v in deploy.sandbox.catalog.network_volumes if v.name == "pid-workspace-100gb"
    ]
    assert pod.network_volume_id == volume.id and pod.datacenter_id == volume.datacenter_id
    assert (pod.volume_dir / "on-the-volume.txt").read_text() == "kept\n"
    assert deploy.shell_command(deploy.stale_pods()[pod.id]["release"]).returncode == 0
    assert deploy.live_pods() == {}
    # Elsewhere: one line naming where the volume is, and no pod.
    elsewhere = deploy.config(
        "hello",
        pod={"image": "img:1", "datacenters": ["US-TX-3"], "gpu_order": ["NVIDIA RTX A4000"]},
        storage={"mode": "network_volume", "volume_name": "pid-workspace-100gb"},
    )
    refused = deploy.run(elsewhere)
    assert refused.returncode != 0
    assert "EU-RO-1" in manifest_of(refused)["failure_reason"]
    assert deploy.live_pods() == {} and len(deploy.terminated()) == 1


def test_audit_commands_after_runs(deploy: CloudDeploy) -> None:
    kept = deploy.config("hello", lifecycle=_lifecycle("stop"))
    done = deploy.run(kept)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    ((pod_id, _),) = deploy.live_pods().items()

    table = deploy.cli("ls-stale")
    assert table.returncode == 0 and pod_id in table.stdout.decode()
    assert "TOTAL" in table.stdout.decode()

    # logs: a stopped pod has no SSH: one line saying so, never a traceback
    logs = deploy.cli("logs", "--config", str(kept), "--no-follow")
    assert logs.returncode == 1, logs.stderr.decode()
    assert logs.stderr.decode().count("\n") == 1 and pod_id in logs.stderr.decode()

    for args in (
        ("gpu-list", "--datacenter", "EU-RO-1"),
        ("gpu-prices",),
        ("gpu-inventory", "--config", str(kept)),
        ("estimate", str(kept)),
        ("validate", "--config", str(kept), "--check-availability"),
    ):
        answer = deploy.cli(*args)
        assert answer.returncode == 0, (args, answer.stderr.decode())
        assert b"Traceback" not in answer.stderr
    assert "NVIDIA RTX A4000" in deploy.cli("gpu-prices").stdout.decode()

    # A dry run asks RunPod read-only questions and changes nothing.
    before = len(_mutations(deploy))
    dry = deploy.cli("run", "--config", str(kept), "--dry-run")
    assert dry.returncode == 0, dry.stderr.decode()
    assert len(_mutations(deploy)) == before and len(deploy.live_pods()) == 1

    # --all-stopped is limited to pods this tool created: a stranger's stopped pod stays.
    stranger = _foreign_stopped_pod(deploy)
    bulk = deploy.cli("cleanup", "--all-stopped", "--yes")
    assert bulk.returncode == 0, bulk.stderr.decode()
    assert deploy.live_pods() == {stranger: "EXITED"}
    everyone = deploy.cli("cleanup", "--all-stopped", "--all-owners", "--yes")
    assert everyone.returncode == 0, everyone.stderr.decode()
    assert deploy.live_pods() == {}


def _foreign_stopped_pod(deploy: CloudDeploy) -> str:
    """A stopped pod someone else made on the account (not named like our runs), with the SDK."""
    from helpers.runpod_sandbox import require_runpod_sdk

    require_runpod_sdk()
    import runpod

    runpod.api_key = deploy.sandbox.api_key
    import os

    os.environ["RUNPOD_API_BASE_URL"] = deploy.sandbox.url
    try:
        made: dict[str, Any] = runpod.create_pod(
            name="someone-elses-notebook",
            image_name="img:1",
            gpu_type_id="NVIDIA RTX A4000",
            data_center_id="EU-RO-1",
            volume_in_gb=10,
        )
        runpod.stop_pod(made["id"])
    finally:
        del os.environ["RUNPOD_API_BASE_URL"]
    return str(made["id"])


def test_recycle_with_drift_deletes_the_old_pod_and_starts_fresh(deploy: CloudDeploy) -> None:
    first = deploy.run(deploy.config("hello", lifecycle=_lifecycle("recycle")))
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    ((old, _),) = deploy.live_pods().items()
    # The same config with another image: the kept pod no longer matches.
    data = yaml.safe_load((deploy.project / "hello.yaml").read_text())
    drifted = deploy.config(
        "hello",
        lifecycle=_lifecycle("recycle"),
        pod={**data["pod"], "image": "runpod/pytorch:2.5.0-py3.11-cuda12.4.1-devel-ubuntu22.04"},
    )
    second = deploy.run(drifted)
    assert second.returncode == 0, second.stderr.decode()[-3000:]
    assert "drift detected: image" in second.stderr.decode()
    live = deploy.live_pods()
    assert old not in live and old in deploy.terminated()
    ((fresh, status),) = live.items()
    assert status == "EXITED" and manifest_of(second)["pod_resumed"] is False
    assert deploy.shell_command(deploy.stale_pods()[fresh]["release"]).returncode == 0


def test_spot_after_graphql_is_retired_is_refused_in_one_line_naming_the_key(
    deploy: CloudDeploy,
) -> None:
    deploy.sandbox.faults.graphql_retired = True  # /graphql answers 410 Gone; v2 is untouched
    config = deploy.config(
        "hello",
        pod={
            "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
            "datacenters": ["EU-RO-1", "US-TX-3"],
            "gpu_order": ["NVIDIA RTX A4000"],
            "spot": True,
        },
    )
    done = deploy.run(config)
    assert done.returncode == 1, done.stderr.decode()[-3000:]
    reason = manifest_of(done)["failure_reason"]
    assert "\n" not in reason and "Traceback" not in done.stderr.decode()
    assert "pod.spot: RunPod's GraphQL API is gone (HTTP 410 from /graphql)" in reason
    assert "remove pod.spot from the config" in reason
    assert deploy.sandbox.pods() == [] and deploy.stale()["pods"] == []
    # The same config without spot runs, on v2 alone.
    config = deploy.config(
        "hello", pod={**yaml.safe_load(config.read_text())["pod"], "spot": False}
    )
    assert deploy.run(config).returncode == 0

"""`runpod-deploy` with `pod.provider: kubernetes`, end to end: the installed CLI as a subprocess
against the Kubernetes API sandbox (the official client over HTTP, every phase over websocket
exec, files as tar over exec).

The hello example runs byte-exact; each lifecycle action leaves what the provider reference says
(pods, claims, pointers, `ls-stale` rows with a release that works); `gpu_order` walks GPU types
the sandbox's nodes cannot place; SIGKILL at every phase boundary leaves every pod listed with a
working release; no secret value reaches a pod spec, an event or the output.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.console_scripts import squarepeg_bin
from helpers.deploy_cli import KILL_TEST_CHANGES, kill_point_batches, manifest_of, run_dir_of
from helpers.kubernetes_deploy import KubeDeploy
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.ports.cluster import ResourceKind

A100 = "NVIDIA A100-SXM4-80GB"
L4 = "NVIDIA L4"
H100 = "NVIDIA H100-80GB-HBM3"  # no node has it

TAINT = "nvidia.com/gpu=present:NoSchedule"  # as the GPU operator taints GPU nodes


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    gpu_nodes = [
        {
            "name": "gpu-a100",
            "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            # room for every pod the SIGKILL test keeps at once (up to 13 runs hold one GPU
            # each); with less, the last runs stay Pending until their schedule timeout
            "capacity": {"nvidia.com/gpu": 16},
            "taints": [TAINT],
        },
        {
            "name": "gpu-l4",
            "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"},
            "capacity": {"nvidia.com/gpu": 1},
            "taints": [TAINT],
        },
    ]
    with KubernetesSandbox(nodes=gpu_nodes) as running:
        yield running


@pytest.fixture
def deploy(tmp_path: Path, sandbox: KubernetesSandbox) -> Iterator[KubeDeploy]:
    made = KubeDeploy(tmp_path, sandbox)
    try:
        yield made
    finally:
        for release in made.stale_pods().values():  # nothing a test leaves for the next one
            made.shell_command(release["release"])
        made.close()


def _lifecycle(on_success: str, on_failure: str = "stop") -> dict[str, str]:
    return {"on_success": on_success, "on_failure": on_failure}


def test_hello_runs_on_a_gpu_pod_and_leaves_nothing(deploy: KubeDeploy) -> None:
    done = deploy.run(deploy.config())
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    job_output = done.stdout.split(b"\n", 1)[1]
    assert job_output == (
        b"__RUNPOD_STEP_START__hello__\n"
        b"hello from the pod; wrote /workspace/out/result.json\n"
        b"__RUNPOD_STEP_DONE__hello__\n"
        b"HELLO_DONE\n"
    )
    manifest = manifest_of(done)
    assert manifest["provider"] == "kubernetes" and manifest["failed"] is False
    assert manifest["gpu_id"] == A100  # the first type of gpu_order fits
    result = json.loads((run_dir_of(done) / "results" / "result.json").read_text())
    assert result["greeting"] == "hello"
    remote_env = json.loads((run_dir_of(done) / "remote_env.json").read_text())
    assert remote_env["remote_python_version"].startswith("Python 3")  # the start snapshot
    assert (run_dir_of(done) / "pip_freeze.txt").read_text().strip()
    assert deploy.live() == set()  # pod and claim deleted
    assert deploy.stale_pods() == {}


def test_stop_keeps_the_claim_and_its_release_removes_it(deploy: KubeDeploy) -> None:
    done = deploy.run(deploy.config(lifecycle=_lifecycle("stop")))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert deploy.pods() == []
    (claim,) = deploy.claims()
    listed = deploy.stale_pods()
    pod_id = claim["metadata"]["name"]
    assert listed[pod_id]["status"] == "EXITED"
    assert deploy.shell_command(listed[pod_id]["release"]).returncode == 0
    assert deploy.live() == set()


def test_preserve_keeps_the_pod_running_and_logs_follow_it(deploy: KubeDeploy) -> None:
    config = deploy.config(lifecycle=_lifecycle("preserve"))
    done = deploy.run(config)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    (pod,) = deploy.pods()
    assert pod["status"]["phase"] == "Running"
    logs = deploy.cli("logs", "--config", str(config), "--no-follow")
    assert logs.returncode == 0 and b"HELLO_DONE" in logs.stdout, logs.stderr.decode()
    listed = deploy.stale_pods()[pod["metadata"]["name"]]
    assert listed["status"] == "RUNNING"
    assert deploy.shell_command(listed["release"]).returncode == 0
    assert deploy.live() == set()


def test_a_kept_running_pod_is_priced_by_kubernetes_price_per_hour(deploy: KubeDeploy) -> None:
    """hello.yaml prices an A100 at 1.20 $/h: the left-behind note and `ls-stale` say what the
    preserved pod's GPU costs (its claim's disk has no price here: not counted)."""
    done = deploy.run(deploy.config(lifecycle=_lifecycle("preserve")))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert "Left billing: ~$1.200/h" in done.stderr.decode()
    listed = deploy.stale()
    (pod,) = listed["pods"]
    assert pod["status"] == "RUNNING"
    assert (pod["usd_per_day"], pod["usd_per_month"]) == pytest.approx((28.8, 864.0))
    assert listed["total"]["usd_per_day"] == pytest.approx(28.8)
    table = deploy.cli("ls-stale", "--provider", "kubernetes").stdout.decode()
    assert "RUNNING" in table and "28.80    864.00" in table, table
    unpriced = deploy.run(
        deploy.config(lifecycle=_lifecycle("preserve"), kubernetes={"price_per_hour": {}})
    )
    assert unpriced.returncode == 0, unpriced.stderr.decode()[-3000:]
    assert "Left billing" not in unpriced.stderr.decode()  # no price: none is made up
    priced = {p["pod_id"]: p["usd_per_day"] for p in deploy.stale()["pods"]}
    assert sorted(priced.values()) == pytest.approx([0.0, 28.8])


def test_recycle_keeps_the_pod_for_the_next_run(deploy: KubeDeploy) -> None:
    config = deploy.config(lifecycle=_lifecycle("recycle"))
    first = deploy.run(config)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    (kept,) = deploy.pods()
    second = deploy.run(config)
    assert second.returncode == 0, second.stderr.decode()[-3000:]
    assert manifest_of(second)["pod_id"] == kept["metadata"]["name"]
    (still,) = deploy.pods()
    assert still["metadata"]["uid"] == kept["metadata"]["uid"]  # the very same pod


def _end_container(sandbox: KubernetesSandbox, pod: str) -> None:
    """The pod's keep-alive ends (it exits 0 on SIGTERM): the pod is Succeeded, finished."""
    uid = sandbox.pod(pod)["metadata"]["uid"]  # type: ignore[index]
    os.kill(sandbox.kubelet._pods[uid].runs["job"].process.pid, signal.SIGTERM)


def test_squarepeg_clean_takes_a_gpu_pods_claim_with_it_unless_its_run_kept_it(
    deploy: KubeDeploy, sandbox: KubernetesSandbox
) -> None:
    """`squarepeg clean --include-kept` removes finished GPU pods: one a killed run left takes
    its claim (its disk) along; one its run preserved leaves its workspace, which runpod-deploy
    lists as a stopped pod with a release that works."""
    done = deploy.run(deploy.config(lifecycle=_lifecycle("preserve")))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    preserved = manifest_of(done)["pod_id"]
    killed = deploy.start(deploy.config(), stop_at="enter-monitor")
    try:
        deploy.wait_for_point(killed, "enter-monitor")
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.communicate(timeout=30)
    (abandoned,) = {p["metadata"]["name"] for p in deploy.pods()} - {preserved}
    for pod in (preserved, abandoned):
        _end_container(sandbox, pod)
    deadline = time.monotonic() + 30
    while any(p["status"].get("phase") != "Succeeded" for p in deploy.pods()):
        assert time.monotonic() < deadline, [p["status"] for p in deploy.pods()]
        time.sleep(0.05)
    clean = subprocess.run(
        [squarepeg_bin(), "clean", "--include-kept", "--min-age", "0", "--yes"],
        env=deploy.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert clean.returncode == 0, clean.stderr
    assert f"persistentvolumeclaim/{preserved} kept: its run asked to keep its workspace" in (
        clean.stderr
    )
    assert deploy.pods() == []
    assert deploy.live() == {preserved}  # the abandoned run's claim went with its pod
    listed = deploy.stale_pods()
    assert set(listed) == {preserved} and listed[preserved]["status"] == "EXITED"
    assert deploy.shell_command(listed[preserved]["release"]).returncode == 0
    assert deploy.live() == set()


def test_a_failed_job_stops_its_pod_for_forensics(deploy: KubeDeploy) -> None:
    config = deploy.config(
        run={
            "script_path": "{volume_mount}/run.sh",
            "log_path": "{volume_mount}/fail.log",
            "success_marker": "NEVER",
            "body": "echo about to fail\nexit 3\n",
        }
    )
    done = deploy.run(config)
    assert done.returncode == 1
    manifest = manifest_of(done)
    assert manifest["failed"] and manifest["lifecycle_action"] == "stop"
    assert deploy.pods() == [] and len(deploy.claims()) == 1


def test_gpu_order_walks_types_no_node_can_place(deploy: KubeDeploy) -> None:
    config = deploy.config(pod={"gpu_order": [H100, L4]}, kubernetes={"schedule_timeout_sec": 2})
    done = deploy.run(config)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    manifest = manifest_of(done)
    assert manifest["gpu_id"] == L4
    events = [
        json.loads(line)
        for line in (run_dir_of(done) / "events.jsonl").read_text().splitlines()
        if line.strip()
    ]
    walked = [e for e in events if e.get("event") == "datacenter_failover"]
    assert walked and walked[0]["from_gpu_id"] == H100 and walked[0]["to_gpu_id"] == L4
    assert "didn't match Pod's node affinity/selector" in walked[0]["reason"]


def test_more_gpus_than_any_node_has_fail_with_the_schedulers_reason(deploy: KubeDeploy) -> None:
    config = deploy.config(
        pod={"gpu_order": [L4], "gpu_count": 2}, kubernetes={"schedule_timeout_sec": 2}
    )
    done = deploy.run(config)
    assert done.returncode == 1
    manifest = manifest_of(done)
    assert manifest["failure_phase"] == "provision"
    assert "Insufficient nvidia.com/gpu" in manifest["failure_reason"]
    assert deploy.live() == set()


@pytest.mark.timeout(400)  # five killed runs side by side and their releases, on 2 cores
@pytest.mark.parametrize("points", kill_point_batches(5))  # every point, in 3 tests xdist spreads
def test_sigkill_at_every_phase_leaves_every_pod_listed_with_a_working_release(
    deploy: KubeDeploy, points: tuple[str, ...]
) -> None:
    config = deploy.config(**KILL_TEST_CHANGES)
    killed: dict[str, bytes] = {}
    procs = {point: deploy.start(config, stop_at=point) for point in points}
    try:
        for point, proc in procs.items():
            deploy.wait_for_point(proc, point)
    finally:  # a run that never reached its point is not left blocked at a later one
        for proc in procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
    for point, proc in procs.items():
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, point
        killed[point] = out
    by_name = {
        obj["metadata"]["annotations"]["pegboard.io/pod-name"]: obj["metadata"]["name"]
        for obj in [*deploy.pods(), *deploy.claims()]
    }
    left: dict[str, str] = {}
    for point, out in killed.items():
        stamp = out.split(b"\n", 1)[0].decode().rsplit("/", 1)[-1]
        pointer = deploy.home / ".local" / "state" / "runpod-deploy" / "runs" / f"{stamp}.json"
        name = json.loads(pointer.read_text())["pod_name"] if pointer.exists() else None
        if name in by_name:
            left[by_name[name]] = point
        if point in ("enter-ready", "enter-monitor", "enter-lifecycle"):
            assert name in by_name, point
        if point in ("enter-provision", "before-create", "after-lifecycle", "enter-manifest"):
            assert name not in by_name, point
    assert deploy.live() == set(left)  # nothing no run's pointer names
    listed = deploy.stale_pods()
    assert set(left) <= set(listed)
    releases = {pod_id: listed[pod_id]["release"] for pod_id in left}
    for pod_id, release in releases.items():
        assert f"--pod-id {pod_id}" in release, (left[pod_id], release)
    for pod_id, done in zip(releases, deploy.shell_commands(list(releases.values())), strict=True):
        assert done.returncode == 0, (left[pod_id], done.stderr.decode())
    assert deploy.live() == set()


SECRET = "s3cr3t-Value-0f-the-job"


def test_no_secret_value_reaches_a_pod_spec_an_event_or_the_output(deploy: KubeDeploy) -> None:
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    config = deploy.config(
        secrets=[{"name": "hf", "destination": "{volume_mount}/.hf-token", "env": ["HF_TOKEN"]}],
        lifecycle=_lifecycle("preserve"),
        run={
            "script_path": "{volume_mount}/run.sh",
            "log_path": "{volume_mount}/secret.log",
            "success_marker": "TOKEN_OK",
            "body": ". {volume_mount}/.hf-token\n"
            f'test "$(printf %s "$HF_TOKEN" | sha256sum | cut -c1-64)" = {digest}\n'
            "echo TOKEN_OK\n",
        },
    )
    done = deploy.cli("run", "--config", str(config), "--print-run-dir", env={"HF_TOKEN": SECRET})
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    (pod,) = deploy.pods()  # preserved: its spec is there to read
    seen: list[Any] = [
        *deploy.cluster.list(ResourceKind.POD, namespace="default"),
        *deploy.claims(),
    ]
    seen += deploy.cluster.list_events(namespace="default", involved_name=pod["metadata"]["name"])
    assert SECRET not in json.dumps(seen)
    assert SECRET.encode() not in done.stdout + done.stderr
    for path in run_dir_of(done).rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_bad_kubernetes_values_are_one_line_each_naming_the_key_exit_2(deploy: KubeDeploy) -> None:
    config = deploy.config(kubernetes={"namespace": "Team A", "gpu_label": "bad label"})
    done = deploy.cli("validate", "--config", str(config))
    assert done.returncode == 2
    header, *lines = done.stderr.decode().strip().splitlines()
    assert header == "runpod-deploy: 2 problems in the configuration:"  # all at once, a line each
    assert "kubernetes.namespace: 'Team A' is not a namespace name" in lines[0]
    assert "kubernetes.gpu_label: 'bad label' is not" in lines[1]
    wrong_type = deploy.config(kubernetes={"schedule_timeout_sec": 0})
    done = deploy.cli("run", "--config", str(wrong_type))
    assert done.returncode == 2
    (line,) = done.stderr.decode().strip().splitlines()
    assert "kubernetes.schedule_timeout_sec: must be > 0, got 0" in line
    assert deploy.live() == set()


def test_an_unknown_context_stops_the_run_before_anything_exists(deploy: KubeDeploy) -> None:
    done = deploy.run(deploy.config(kubernetes={"context": "no-such-context"}))
    assert done.returncode == 2
    (line,) = done.stderr.decode().strip().splitlines()[-1:]
    assert line.startswith("runpod-deploy: kubernetes.context: ") and "no-such-context" in line
    assert deploy.live() == set()

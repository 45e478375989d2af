"""The sweep's Lease through the CLI against the Kubernetes API sandbox: a Lease left by a runner
that died expires and another run sweeps; 403 on Leases falls back without failing the run."""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.console_scripts import sandbox_env
from helpers.squarepeg_e2e import healthy, sandbox, squarepeg_bin
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.sweep_schedule import micro_time, sweep_lease_name

__all__ = ["healthy", "sandbox"]  # fixtures this module uses

pytestmark = pytest.mark.slow


@pytest.fixture
def env(sandbox: KubernetesSandbox, tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "sweep.yaml"
    config.write_text("orphan_sweep_min_age: 0\n")
    return {**sandbox_env(sandbox, tmp_path), "SQUAREPEG_CONFIG": str(config)}


def squarepeg(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([squarepeg_bin(), *argv], env=env, capture_output=True, timeout=60)


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.05)


def finished_orphan(sandbox: KubernetesSandbox, cluster: KubernetesCluster, user: str) -> str:
    """A pod a killed runner left behind: finished, its runner's hold long run out."""
    name = f"orphan-{secrets.token_hex(3)}"
    own = labels.own_labels(run_id=f"dead-{name}", created_by=user, keep=False)
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": own},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "alpine", "command": ["true"]}],
            },
        },
        namespace="default",
    )
    wait_for(lambda: (sandbox.pod(name) or {}).get("status", {}).get("phase") == "Succeeded")
    return name


def test_a_lease_left_by_a_dead_runner_expires_and_the_next_run_sweeps(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    cluster = KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]})
    user = env["LOGNAME"]
    lease_name = sweep_lease_name(user)
    now = time.time()
    cluster.create(  # a runner took the sweep's turn just now, then was killed
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": lease_name},
            "spec": {
                "holderIdentity": "dead-runner",
                "leaseDurationSeconds": 60,
                "acquireTime": micro_time(now),
                "renewTime": micro_time(now),
                "leaseTransitions": 0,
            },
        },
        namespace="default",
    )
    orphan = finished_orphan(sandbox, cluster, user)

    within = squarepeg(env, "run", "alpine", "echo", "within")
    assert within.returncode == 0 and within.stdout == b"within\n", within.stderr
    assert sandbox.pod(orphan) is not None  # someone swept less than an interval ago

    lease = cluster.read(ResourceKind.LEASE, lease_name, namespace="default")
    assert lease is not None and lease["spec"]["holderIdentity"] == "dead-runner"
    lease["spec"]["renewTime"] = micro_time(now - 61)  # as if the interval had passed
    cluster.replace(ResourceKind.LEASE, lease_name, lease, namespace="default")

    after = squarepeg(env, "run", "alpine", "echo", "after")
    assert after.returncode == 0 and after.stdout == b"after\n", after.stderr
    assert f"deleted orphan pod/{orphan}".encode() in after.stderr
    assert sandbox.pod(orphan) is None
    taken = cluster.read(ResourceKind.LEASE, lease_name, namespace="default")
    assert taken is not None
    assert taken["spec"]["holderIdentity"] != "dead-runner"
    assert taken["spec"]["leaseTransitions"] == 1


def test_forbidden_leases_fall_back_without_failing_the_run(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    sandbox.faults.reject_next(
        ".*", "/leases", 403, message="leases.coordination.k8s.io is forbidden", times=1000
    )
    try:
        result = squarepeg(env, "run", "alpine", "echo", "fine")
    finally:
        sandbox.faults.reject.clear()
    stderr = result.stderr.decode()
    assert result.returncode == 0 and result.stdout == b"fine\n", stderr
    assert stderr.count("cannot use Lease") == 1
    assert "sweeping after about 1 run in 5 instead" in stderr
    assert "Traceback" not in stderr

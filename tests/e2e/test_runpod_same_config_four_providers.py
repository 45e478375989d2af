"""One job config runs on `runpod`, `ssh`, `local` and `kubernetes` by changing `pod.provider`
and that provider's own section only (issue 18's "done when"), each against its sandbox: the
RunPod API sandbox (REST v2, each pod's sshd), a loopback sshd, this machine, and the Kubernetes
API sandbox (websocket exec). The job's output, its artifact and the manifest's verdict agree.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.deploy_cli import manifest_of, run_dir_of
from helpers.kubernetes_deploy import KubeDeploy
from helpers.runpod_cloud_deploy import CloudDeploy
from helpers.sshd import SshClientKey
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.sshd import LoopbackSshd

GPU = "NVIDIA RTX A4000"  # in the RunPod sandbox's catalog; a node label on the cluster

# The job: examples/local/hello.yaml's steps, on an image and GPU every provider accepts.
JOB: dict[str, Any] = {
    "schema_version": 2,
    "name": "same-everywhere",
    "local": {"project_root": "local"},
    "pod": {
        "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
        "datacenters": ["EU-RO-1"],
        "gpu_order": [GPU],
    },
    "storage": {"mode": "ephemeral", "volume_mount": "/workspace", "volume_gb": 10},
    "budget": {"cost_cap_usd": 1.0, "assumed_hourly_rate_usd": 0.5, "max_runtime_minutes": 10},
    "setup": [{"command": "mkdir -p {volume_mount}/hello-project {volume_mount}/out"}],
    "staging": [
        {
            "label": "project",
            "source": "hello-project/",
            "destination": "{volume_mount}/hello-project",
            "excludes_default": True,
        }
    ],
    "preflight": [{"command": "test -f {volume_mount}/hello-project/src/hello.py"}],
    "run": {
        "script_path": "{volume_mount}/run.sh",
        "log_path": "{volume_mount}/hello.log",
        "success_marker": "HELLO_DONE",
        "body": "set -euo pipefail\ncd {volume_mount}/hello-project\n"
        "GREETING=bonjour python3 src/hello.py {volume_mount}/out\necho HELLO_DONE\n",
    },
    "artifacts": [
        {
            "label": "results",
            "remote_path": "{volume_mount}/out/",
            "local_path": "{run_dir}/results",
        }
    ],
    "lifecycle": {"on_success": "delete", "on_failure": "stop"},
}

TAINT = "nvidia.com/gpu=present:NoSchedule"  # as the GPU operator taints GPU nodes


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[CloudDeploy]:
    made = CloudDeploy(tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def cluster() -> Iterator[KubernetesSandbox]:
    node = {
        "name": "gpu-a4000",
        "labels": {"nvidia.com/gpu.product": "NVIDIA-RTX-A4000"},
        "capacity": {"nvidia.com/gpu": 4},
        "taints": [TAINT],
    }
    with KubernetesSandbox(nodes=[node]) as running:
        yield running


def test_one_config_runs_on_all_four_providers(
    cloud: CloudDeploy,
    cluster: KubernetesSandbox,
    sshd: LoopbackSshd,
    ssh_client_key: SshClientKey,
    tmp_path: Path,
) -> None:
    (cloud.project / "local").mkdir()
    examples = Path(__file__).resolve().parents[2] / "examples" / "local" / "hello-project"
    shutil.copytree(examples, cloud.project / "local" / "hello-project")
    sections: dict[str, dict[str, Any]] = {
        "runpod": {"ssh": {"key_path": "~/.ssh/id_ed25519"}},
        "ssh": {
            "ssh": {
                "host": sshd.host,
                "port": sshd.port,
                "user": pwd.getpwuid(os.getuid()).pw_name,
                "key_path": str(ssh_client_key.private_path),
                "workspaces_root": str(tmp_path / "host-workspaces"),
            }
        },
        "local": {},
        "kubernetes": {"kubernetes": {"namespace": "default"}},
    }
    env = {
        "KUBECONFIG": str(cluster.kubeconfig_path),
        "PEGBOARD_LOCAL_PODS_ROOT": str(tmp_path / "local-pods"),
    }
    results = {}
    for provider, section in sections.items():
        config = {**JOB, "pod": {**JOB["pod"], "provider": provider}, **section}
        path = cloud.project / f"job-{provider}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        done = cloud.cli("run", "--config", str(path), "--print-run-dir", env=env)
        assert done.returncode == 0, (provider, done.stderr.decode()[-3000:])
        output = done.stdout.split(b"\n", 1)[1]
        assert output.endswith(b"/out/result.json\nHELLO_DONE\n"), (provider, output)
        manifest = manifest_of(done)
        assert manifest["provider"] == provider and manifest["failed"] is False
        results[provider] = json.loads((run_dir_of(done) / "results" / "result.json").read_text())
        assert results[provider]["greeting"] == "bonjour"
    assert set(results) == set(sections), results  # every provider ran the job and pulled it
    # on_success: delete, everywhere: no RunPod pod, no cluster pod or claim is left
    assert cloud.live_pods() == {}
    cluster_view = KubeDeploy(tmp_path / "cluster-view", cluster)
    try:
        assert cluster_view.live() == set()
    finally:
        cluster_view.close()

"""A GPU name the RunPod API sandbox's catalog does not list, through the CLI (issue 17 item
8): `run`, `gpu-inventory` and `validate --check-availability` each say in one line that it
is an unknown name, with the key and the closest names, exit 2; no pod, no pointer (the run's
manifest says why)."""

from __future__ import annotations

from pathlib import Path

from helpers.runpod_cloud_deploy import CloudDeploy

POD = {
    "image": "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04",
    "datacenters": ["EU-RO-1"],
    "gpu_order": ["NVIDIA RTX A4000", "NVIDIA RTX A4500 Ada"],  # the second is a typo
}


def test_an_unknown_gpu_name_is_a_config_error_everywhere(tmp_path: Path) -> None:
    deploy = CloudDeploy(tmp_path)
    try:
        config = str(deploy.config("hello", pod=POD))
        for argv in (
            ("run", "--config", config),
            ("gpu-inventory", "--config", config),
            ("validate", "--config", config, "--check-availability"),
        ):
            done = deploy.cli(*argv)
            err = done.stderr.decode()
            assert done.returncode == 2, (argv, err[-2000:])
            (line,) = [x for x in err.splitlines() if "pod.gpu_order[1]" in x]
            assert "unknown GPU type 'NVIDIA RTX A4500 Ada'" in line, line
            assert "closest: NVIDIA RTX A4500" in line and "stockout" not in err, line
        assert deploy.sandbox.pods() == []
        listing = deploy.stale()
        assert listing["pods"] == [] and listing["dangling_pointers"] == []
    finally:
        deploy.close()

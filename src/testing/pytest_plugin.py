"""pytest fixtures for your own tests, loaded by pytest through the `pegboard` entry point
(pytest11) once pegboard is installed; docs/testing.md.

| fixture | scope | gives |
|---|---|---|
| `fake_cluster` | test | a FakeCluster on a fresh FakeClock (virtual time) |
| `squarepeg_on_fakes` | test | a Squarepeg bound to `fake_cluster`, HOME under tmp_path |
| `k8s_sandbox` | module | a started Kubernetes API sandbox |
| `squarepeg_on_sandbox` | test | a Squarepeg on `k8s_sandbox`'s kubeconfig, HOME under tmp_path |
| `runpod_sandbox` | module | a started RunPod API sandbox (pods are real sshds) |
| `runpod_deploy_on_sandbox` | test | a RunpodDeploy on the default provider against `runpod_sandbox` |

Loading this module imports nothing heavy (no kubernetes, runpod, paramiko, sandbox): each
fixture imports what it needs when a test asks for it. Turn the plugin off with
`-p no:pegboard`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pegboard.adapters.fakes import FakeCluster
    from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
    from pegboard.adapters.sandboxes.runpod import RunPodSandbox
    from pegboard.testing import RunpodDeploy, Squarepeg

__all__ = [
    "fake_cluster",
    "k8s_sandbox",
    "runpod_deploy_on_sandbox",
    "runpod_sandbox",
    "squarepeg_on_fakes",
    "squarepeg_on_sandbox",
]


@pytest.fixture
def fake_cluster() -> FakeCluster:
    from pegboard.adapters.fakes import FakeClock, FakeCluster

    return FakeCluster(FakeClock(), context="fake", namespace="default")


@pytest.fixture
def squarepeg_on_fakes(fake_cluster: FakeCluster, tmp_path: Path) -> Squarepeg:
    from pegboard.testing import Squarepeg

    home = tmp_path / "pegboard-home"
    home.mkdir(exist_ok=True)
    return Squarepeg(cluster=fake_cluster, home=home)


@pytest.fixture(scope="module")
def k8s_sandbox() -> Iterator[KubernetesSandbox]:
    from pegboard.testing import kubernetes_sandbox

    with kubernetes_sandbox() as sandbox:
        yield sandbox


@pytest.fixture
def squarepeg_on_sandbox(k8s_sandbox: KubernetesSandbox, tmp_path: Path) -> Squarepeg:
    from pegboard.testing import Squarepeg

    home = tmp_path / "pegboard-home"
    home.mkdir(exist_ok=True)
    return Squarepeg(kubeconfig=k8s_sandbox.kubeconfig_path, home=home)


@pytest.fixture(scope="module")
def runpod_sandbox() -> Iterator[RunPodSandbox]:
    from pegboard.testing import runpod_sandbox as started

    with started(ssh=True) as sandbox:
        yield sandbox


@pytest.fixture
def runpod_deploy_on_sandbox(runpod_sandbox: RunPodSandbox, tmp_path: Path) -> RunpodDeploy:
    from pegboard.testing import RunpodDeploy

    return RunpodDeploy.on_runpod_sandbox(runpod_sandbox, home=tmp_path / "pegboard-home")

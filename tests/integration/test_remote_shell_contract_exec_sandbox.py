"""RemoteShell contract against ExecShell over KubernetesCluster's websocket exec into a pod of
the Kubernetes API sandbox (real bash, coreutils and `timeout` behind the exec)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.remote_shell_contract import RemoteShellContract
from contract.test_remote_shell_contract_ssh import _SshDriver
from helpers.exec_pods import ExecPod, exec_pod
from pegboard.adapters.exec_shell import ExecShell


class _SandboxDriver(_SshDriver):
    """The real-shell driver (files on this machine, jobs killed by their pid files)."""

    def __init__(self, pod: ExecPod, root: Path) -> None:
        root.mkdir(parents=True)
        self.shell = ExecShell(pod.cluster, namespace=pod.namespace, pod=pod.name, container="main")
        self.root = str(root)


@pytest.fixture(scope="module")
def pod() -> Iterator[ExecPod]:
    with exec_pod() as running:
        yield running


class TestExecShellOnSandboxContract(RemoteShellContract):
    @pytest.fixture
    def driver(self, pod: ExecPod, tmp_path: Path) -> Iterator[Any]:
        driver = _SandboxDriver(pod, tmp_path / "pod")
        yield driver
        driver.stop_jobs()

"""FileSync contract against TarFileSync over KubernetesCluster's websocket exec into a pod of
the Kubernetes API sandbox (real GNU tar and find behind the exec, stdin delimited by tar)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.file_sync_contract import FileSyncContract
from contract.test_file_sync_contract_ssh import _Driver
from helpers.exec_pods import ExecPod, exec_pod, pull_and_push_a_relative_path_starting_with_a_dash
from pegboard.adapters.tar_file_sync import TarFileSync


class _SandboxDriver(_Driver):
    """The real-files driver: the sandbox's pod sees this machine's files."""

    def __init__(self, pod: ExecPod, root: Path) -> None:
        self.sync = TarFileSync(pod.cluster, namespace=pod.namespace, pod=pod.name)
        self.remote_root = str(root)


@pytest.fixture(scope="module")
def pod() -> Iterator[ExecPod]:
    with exec_pod() as running:
        yield running


class TestTarFileSyncOnSandboxContract(FileSyncContract):
    @pytest.fixture
    def driver(self, pod: ExecPod, tmp_path: Path) -> Any:
        return _SandboxDriver(pod, tmp_path / "pod")


def test_a_relative_path_starting_with_a_dash(pod: ExecPod, tmp_path: Path) -> None:
    pull_and_push_a_relative_path_starting_with_a_dash(pod.cluster, pod, tmp_path)

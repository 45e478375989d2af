"""FileSync contract against TarFileSync over FakeCluster's exec (the pod's files: a FakeHost)."""

from __future__ import annotations

from typing import Any

import pytest

from contract.file_sync_contract import FileSyncContract
from contract.test_file_sync_contract_fake import _Driver
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.tar_file_sync import TarFileSync


class _TarFakeDriver(_Driver):
    """FakeFileSync's driver (files on the host), the host being the pod's userland."""

    def __init__(self) -> None:
        self.cluster = FakeCluster(FakeClock(), namespace="sync")
        self.cluster.script_pod("gpu-pod", PodScript().running(at=0.5))
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "gpu-pod"},
            "spec": {"containers": [{"name": "main", "image": "ubuntu:24.04"}]},
        }
        self.cluster.create(manifest, namespace="sync")
        self.cluster.advance(1.0)
        self.host = self.cluster.pod_host("gpu-pod", "sync")
        self.sync = TarFileSync(self.cluster, namespace="sync", pod="gpu-pod", container="main")
        self.remote_root = "/workspace/contract"


class TestTarFileSyncOnFakeClusterContract(FileSyncContract):
    @pytest.fixture
    def driver(self) -> Any:
        return _TarFakeDriver()

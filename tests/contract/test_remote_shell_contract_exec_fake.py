"""RemoteShell contract against ExecShell over FakeCluster's exec (the pod's userland is a
FakeHost: pegboard's pod commands act on its files and jobs, other commands are scripted)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from contract.remote_shell_contract import RemoteShellContract
from contract.test_remote_shell_contract_fake import _FakeDriver
from pegboard.adapters.exec_shell import ExecShell
from pegboard.adapters.fakes import FakeClock, FakeCluster, FakeHost, PodScript


class _ExecFakeDriver(_FakeDriver):
    """FakeShell's driver (expect, script_job, file_mode on the host), the pod's host."""

    namespace = "shells"

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.cluster = FakeCluster(self.clock, namespace=self.namespace)
        self.cluster.script_pod("gpu-pod", PodScript().running(at=0.5))
        self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "gpu-pod"},
                "spec": {"containers": [{"name": "main", "image": "ubuntu:24.04"}]},
            },
            namespace=self.namespace,
        )
        self.cluster.advance(1.0)
        self.host: FakeHost = self.cluster.pod_host("gpu-pod", self.namespace)
        self.shell = ExecShell(
            self.cluster,
            namespace=self.namespace,
            pod="gpu-pod",
            container="main",
            clock=self.clock,
        )
        self.root = "/workspace/contract"

    def settle(self) -> None:
        self.cluster.advance(0.05)


class TestExecShellOnFakeClusterContract(RemoteShellContract):
    @pytest.fixture
    def driver(self) -> Iterator[Any]:
        yield _ExecFakeDriver()

"""Cluster.exec's contract against FakeCluster (its pods' userland scripted per test)."""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Iterator

import pytest

from contract.cluster_exec_contract import ClusterExecContract
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.ports.cluster import JsonObject


class FakeExecDriver:
    namespace = "contract"

    def __init__(self) -> None:
        self.cluster = FakeCluster(FakeClock(), namespace=self.namespace)
        self._running: str | None = None

    def _create(self, script: PodScript) -> str:
        name = f"exec-{uuid.uuid4().hex[:8]}"
        self.cluster.script_pod(name, script)
        manifest: JsonObject = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
            },
        }
        self.cluster.create(manifest, namespace=self.namespace)
        self.cluster.advance(2.0)
        return name

    def running_pod(self) -> str:
        if self._running is None:
            self._running = self._create(PodScript().running(at=1.0))
        return self._running

    def finished_pod(self) -> str:
        return self._create(PodScript.completes(start=0.5, duration=0.5))

    def expect(
        self,
        argv: list[str],
        *,
        stdout: bytes = b"",
        stderr: bytes = b"",
        exit_code: int = 0,
        duration: float = 0.0,
    ) -> None:
        host = self.cluster.pod_host(self.running_pod(), self.namespace)
        host.on_command(
            "^" + re.escape(shlex.join(argv)) + "$",
            exit_code=exit_code,
            stdout=stdout,
            stderr=stderr,
            duration=duration,
        )

    def deny_exec(self, pod: str) -> None:
        self.cluster.denied.add("create pods/exec")


class TestFakeClusterExecContract(ClusterExecContract):
    @pytest.fixture
    def exec_driver(self) -> Iterator[FakeExecDriver]:
        yield FakeExecDriver()

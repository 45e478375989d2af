"""The Cluster contract against the shipped FakeCluster (virtual time, scripted kubelet)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from contract.cluster_contract import ClusterContract
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.ports.cluster import JsonObject


class FakeDriver:
    """Scripts FakeCluster's kubelet to do what the manifest's command would have done."""

    namespace = "contract"
    timeout = 60.0

    def __init__(self) -> None:
        self.cluster = FakeCluster(FakeClock(), namespace=self.namespace)

    def _script(self, output: Sequence[bytes], exit_code: int | None, gap: float) -> PodScript:
        script = PodScript().running(at=1.0)
        for i, part in enumerate(output):
            script = script.log(part, at=1.0 + i * gap)
        if exit_code is not None:
            script = script.exit(exit_code, at=1.0 + len(output) * gap + 0.5)
        return script

    def _pod_spec(self) -> JsonObject:
        return {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
        }

    def pod(
        self,
        name: str,
        *,
        output: Sequence[bytes] = (),
        exit_code: int | None = 0,
        gap: float = 0.0,
        labels: dict[str, str] | None = None,
    ) -> JsonObject:
        self.cluster.script_pod(name, self._script(output, exit_code, gap))
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": self._pod_spec(),
        }

    def job(
        self,
        name: str,
        *,
        output: Sequence[bytes] = (),
        exit_code: int | None = 0,
        labels: dict[str, str] | None = None,
    ) -> JsonObject:
        self.cluster.script_pod(name, self._script(output, exit_code, 0.0))
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"backoffLimit": 0, "template": {"spec": self._pod_spec()}},
        }

    def add_event(self, pod: str, *, reason: str, message: str, type: str = "Warning") -> None:
        self.cluster.add_event(pod, reason, message, type=type, namespace=self.namespace)


class TestFakeClusterContract(ClusterContract):
    __test__ = True

    @pytest.fixture
    def harness(self) -> Iterator[FakeDriver]:
        yield FakeDriver()

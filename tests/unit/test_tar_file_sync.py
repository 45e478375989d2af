"""TarFileSync on FakeCluster beyond the contract: what it asks the pod to list, and a file
pushed twice."""

from __future__ import annotations

import os
from pathlib import Path

from pegboard.adapters import pod_commands
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.tar_file_sync import TarFileSync


def _cluster() -> FakeCluster:
    cluster = FakeCluster(FakeClock(), namespace="ns")
    cluster.script_pod("p", PodScript().running(at=0.5))
    spec = {"containers": [{"name": "main", "image": "ubuntu"}]}
    cluster.create(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec},
        namespace="ns",
    )
    cluster.advance(1.0)
    return cluster


def _trees(cluster: FakeCluster) -> list[tuple[str, ...]]:
    execs = [r for r in cluster.requests if r.operation == "exec"]
    commands = [pod_commands.parse(list(r.params["command"])) for r in execs]
    return [c.params for c in commands if c is not None and c.name == "tree"]


def test_a_single_file_push_lists_that_file_only_not_the_whole_directory(tmp_path: Path) -> None:
    cluster = _cluster()
    host = cluster.pod_host("p", "ns")
    for i in range(50):
        host.put(f"/workspace/checkpoints/step-{i}.pt", b"w" * 10)
    secret = tmp_path / "token.env"
    secret.write_bytes(b"T=1\n")
    sync = TarFileSync(cluster, namespace="ns", pod="p")
    first = sync.push(str(secret), "/workspace/", chmod="F600")
    assert (first.files, first.bytes_transferred) == (1, 4)
    assert host.read("/workspace/token.env") == b"T=1\n"
    assert host.mode("/workspace/token.env") == 0o600
    assert _trees(cluster) == [("/workspace/token.env", "0")]
    again = sync.push(str(secret), "/workspace/", chmod="F600")
    assert (again.files, again.bytes_transferred) == (0, 0)
    os.utime(secret, (1, 1))
    assert sync.push(str(secret), "/workspace/", chmod="F600").files == 1

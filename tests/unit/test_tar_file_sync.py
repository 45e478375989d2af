"""TarFileSync on FakeCluster beyond the contract: what it asks the pod to list, a file
pushed twice, and a listing it does not trust."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pegboard.adapters import pod_commands
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.tar_file_sync import TarFileSync
from pegboard.domain.errors import PortError
from pegboard.domain.ports.cluster import ExecResult


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


class _Listing:
    """A Cluster whose pod answers every `tree` with the listing given."""

    def __init__(self, real: FakeCluster, listing: bytes) -> None:
        self._real = real
        self._listing = listing

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def exec(self, pod: str, command: Any, **kwargs: Any) -> ExecResult:
        parsed = pod_commands.parse(list(command))
        if parsed is None or parsed.name != "tree":
            return self._real.exec(pod, command, **kwargs)
        kwargs["on_stdout"](self._listing)
        return ExecResult(0)


@pytest.mark.parametrize(
    "name",
    [
        b"/workspace/out/../../etc/cron.d/x",
        b"/etc/passwd",
        b"/workspace/outside",
        b"/workspace/out/",
    ],
)
def test_a_listing_naming_a_path_outside_the_one_listed_is_refused(
    tmp_path: Path, name: bytes
) -> None:
    """A pull writes where the pod's listing says: a name that climbs out is never taken."""
    listing = b"41ed 4096 1\n81a4 3 1\n\0/workspace/out\0\0" + name + b"\0\0"
    sync = TarFileSync(_Listing(_cluster(), listing), namespace="ns", pod="p")  # type: ignore[arg-type]
    with pytest.raises(PortError, match="unexpected listing from the pod"):
        sync.pull("/workspace/out/", str(tmp_path / "back"))
    assert not (tmp_path / "back").exists()


def test_a_listing_cut_short_is_one_line_error() -> None:
    listing = b"41ed 4096 1\n81a4 3 1\n\0/workspace/out\0\0"  # two stat lines, one name
    sync = TarFileSync(_Listing(_cluster(), listing), namespace="ns", pod="p")  # type: ignore[arg-type]
    with pytest.raises(PortError, match="unexpected listing from the pod"):
        sync.pull("/workspace/out/", "/nonexistent")

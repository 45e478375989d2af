"""FileSync contract against TarFileSync in a pod whose userland is busybox (an alpine-like
image: busybox's sh, find, stat, tar, xargs and head; no bash, no GNU find -printf, no GNU
tar --null or -T), over the Kubernetes API sandbox's websocket exec.

The sandbox runs a container's commands as local processes, and an exec'd command is looked up
on the container's PATH (pkg/kubelet: the container's env, as runc resolves argv[0]), so a PATH
holding only busybox's applets is the userland of a busybox image. Over v5.channel.k8s.io
(stdin closed after its last byte) and v4 alone (never closed: busybox tar, which reads its
input to the end, must be told how much there is)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.file_sync_contract import FileSyncContract
from contract.test_file_sync_contract_ssh import _Driver
from helpers.components import require_executable
from helpers.exec_pods import (
    ExecPod,
    exec_pod,
    pull_and_push_a_relative_path_starting_with_a_dash,
    v4_cluster,
)
from pegboard.adapters.tar_file_sync import TarFileSync


def busybox_path(busybox: str, where: Path) -> str:
    """A directory of busybox's applets, as a busybox image's /bin: what its PATH finds."""
    where.mkdir(parents=True, exist_ok=True)
    listed = subprocess.run([busybox, "--list"], capture_output=True, check=True, text=True)
    for applet in listed.stdout.split():
        os.symlink(busybox, where / applet)
    return str(where)


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExecPod]:
    busybox = require_executable("busybox", install_hint="apt-get install busybox")
    path = busybox_path(busybox, tmp_path_factory.mktemp("busybox") / "bin")
    with exec_pod(env={"PATH": path}) as running:
        yield running


@pytest.fixture(scope="module", params=["v5", "v4"])
def cluster(
    request: pytest.FixtureRequest, pod: ExecPod, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    if request.param == "v5":  # what the client prefers
        yield pod.cluster
        return
    with v4_cluster(pod, tmp_path_factory.mktemp("v4home")) as v4:
        yield v4


class _BusyboxDriver(_Driver):
    def __init__(self, cluster: Any, pod: ExecPod, root: Path) -> None:
        self.sync = TarFileSync(cluster, namespace=pod.namespace, pod=pod.name)
        self.remote_root = str(root)


def test_the_pods_userland_is_busybox_only(pod: ExecPod) -> None:
    script = (
        "command -v bash || echo no-bash; find --help 2>&1 | head -1; tar --help 2>&1 | head -1"
    )
    result = pod.cluster.exec(pod.name, ["sh", "-c", script], namespace=pod.namespace, timeout=20)
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "no-bash"
    assert all(line.startswith("BusyBox") for line in lines[1:]), lines


class TestTarFileSyncOnBusyboxContract(FileSyncContract):
    @pytest.fixture
    def driver(self, cluster: Any, pod: ExecPod, tmp_path: Path) -> Any:
        return _BusyboxDriver(cluster, pod, tmp_path / "pod")


def test_a_pull_of_more_names_than_one_tar_command_line_takes(
    cluster: Any, pod: ExecPod, tmp_path: Path
) -> None:
    """xargs runs tar more than once past its command-line size (busybox: 128 KiB): the pod
    then sends archive after archive, and every file of each arrives."""
    remote = tmp_path / "pod"
    remote.mkdir()
    names = [f"{i:04d}-{'n' * 120}.txt" for i in range(1500)]  # ~190 KB of names
    for name in names:
        (remote / name).write_bytes(name.encode())
    sync = TarFileSync(cluster, namespace=pod.namespace, pod=pod.name)
    result = sync.pull(f"{remote}/", str(tmp_path / "back"))
    assert result.files == len(names)
    assert sorted(os.listdir(tmp_path / "back")) == names
    assert (tmp_path / "back" / names[-1]).read_bytes() == names[-1].encode()


def test_a_relative_path_starting_with_a_dash(cluster: Any, pod: ExecPod, tmp_path: Path) -> None:
    pull_and_push_a_relative_path_starting_with_a_dash(cluster, pod, tmp_path)

"""What ExecShell, TarFileSync and KubernetesCluster.exec promise beyond their contracts, on the
Kubernetes API sandbox: bounded memory for large transfers, the v4 protocol (no stdin close),
a timed-out command's whole process group killed in the pod, links, a hostile pull."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import exec_pods
from helpers.exec_pods import ExecPod, exec_pod
from pegboard.adapters import pod_commands
from pegboard.adapters.exec_shell import ExecShell
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.tar_file_sync import TarFileSync
from pegboard.domain.ports.cluster import ExecResult
from pegboard.domain.ports.remote_shell import CommandTimedOut

MIB = 1 << 20


@pytest.fixture(scope="module")
def pod() -> Iterator[ExecPod]:
    with exec_pod() as running:
        yield running


@pytest.fixture(scope="module")
def v4_cluster(pod: ExecPod, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The same sandbox through a client that offers v4.channel.k8s.io only."""
    with exec_pods.v4_cluster(pod, tmp_path_factory.mktemp("v4home")) as adapter:
        yield adapter


def _random_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with path.open("wb") as out:
        left = size
        while left:
            piece = os.urandom(min(MIB, left))
            digest.update(piece)
            out.write(piece)
            left -= len(piece)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while piece := source.read(MIB):
            digest.update(piece)
    return digest.hexdigest()


# The sandbox serves from this process, so its own buffers (up to 4 MiB of unread stdin, the
# frames in flight) count too: the bound is far below the sizes moved, not near zero.
BOUND = 16 * MIB


def _peak_python_bytes(call: Any) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_large_stdout_streams_in_bounded_memory(pod: ExecPod) -> None:
    size = 64 * MIB
    digest = hashlib.sha256()
    seen = [0]

    def take(chunk: bytes) -> None:
        seen[0] += len(chunk)
        digest.update(chunk)

    argv = ["head", "-c", str(size), "/dev/zero"]
    results: list[ExecResult] = []
    peak = _peak_python_bytes(
        lambda: results.append(
            pod.cluster.exec(pod.name, argv, namespace=pod.namespace, on_stdout=take, timeout=300)
        )
    )
    assert results[0].exit_code == 0 and seen[0] == size
    assert digest.hexdigest() == hashlib.sha256(b"\0" * size).hexdigest()
    assert peak < BOUND, f"peak {peak / MIB:.1f} MiB of Python allocations for 64 MiB"


def test_push_and_pull_a_large_file_in_bounded_memory(pod: ExecPod, tmp_path: Path) -> None:
    size = 48 * MIB
    source = tmp_path / "up" / "weights.bin"
    source.parent.mkdir()
    digest = _random_file(source, size)
    sync = TarFileSync(pod.cluster, namespace=pod.namespace, pod=pod.name, container="main")
    remote = tmp_path / "pod"
    pushed = []
    push_peak = _peak_python_bytes(
        lambda: pushed.append(sync.push(f"{source.parent}/", str(remote)))
    )
    assert (pushed[0].files, pushed[0].bytes_transferred) == (1, size)
    assert _sha256(remote / "weights.bin") == digest
    back = tmp_path / "down"
    pulled = []
    pull_peak = _peak_python_bytes(lambda: pulled.append(sync.pull(f"{remote}/", str(back))))
    assert (pulled[0].files, pulled[0].bytes_transferred) == (1, size)
    assert _sha256(back / "weights.bin") == digest
    assert push_peak < BOUND, f"push peak {push_peak / MIB:.1f} MiB for a 48 MiB file"
    assert pull_peak < BOUND, f"pull peak {pull_peak / MIB:.1f} MiB for a 48 MiB file"


def test_shell_and_sync_work_over_v4(pod: ExecPod, v4_cluster: Any, tmp_path: Path) -> None:
    """v4 cannot close stdin: every stdin the adapters send says where it ends."""
    shell = ExecShell(v4_cluster, namespace=pod.namespace, pod=pod.name, cwd=str(tmp_path))
    assert shell.run("cat | wc -c", timeout=20, stdin=b"12345").stdout.strip() == b"5"
    shell.write_file(f"{tmp_path}/s/secret", b"T=1\n", mode=0o600)
    assert (tmp_path / "s" / "secret").read_bytes() == b"T=1\n"
    sync = TarFileSync(v4_cluster, namespace=pod.namespace, pod=pod.name)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_bytes(b"a")
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "extra").write_bytes(b"x")
    result = sync.push(f"{tmp_path}/src/", f"{tmp_path}/dst", delete=True)
    assert result.files == 1
    assert sorted(os.listdir(tmp_path / "dst")) == ["a.txt"]


@pytest.mark.parametrize("protocol", ["v5", "v4"])
def test_a_command_that_reads_its_stdin_late_still_gets_all_of_it(
    pod: ExecPod, v4_cluster: Any, protocol: str
) -> None:
    """16 MiB fill every buffer on the way while the command sleeps: the stdin feeder's send
    waits for the pod, for longer than the reader's one-second poll (that poll's timeout once
    cut the feed short, and the command then waited for the rest until the exec timed out)."""
    cluster = pod.cluster if protocol == "v5" else v4_cluster
    size = 16 * MIB
    result = cluster.exec(
        pod.name,
        ["sh", "-c", f"sleep 2; head -c {size} | wc -c"],
        namespace=pod.namespace,
        stdin=b"x" * size,
        timeout=60,
    )
    assert (result.exit_code, result.stdout.strip()) == (0, str(size).encode())


def test_a_timed_out_command_dies_with_its_children(pod: ExecPod, tmp_path: Path) -> None:
    shell = ExecShell(pod.cluster, namespace=pod.namespace, pod=pod.name)
    marker = tmp_path / "child.pid"
    with pytest.raises(CommandTimedOut):
        shell.run(f"sleep 300 & echo $! > {marker}; wait", timeout=1)
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the command's child outlived its timeout"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def test_links_round_trip_as_links(pod: ExecPod, tmp_path: Path) -> None:
    sync = TarFileSync(pod.cluster, namespace=pod.namespace, pod=pod.name)
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    (src / "data" / "x.bin").write_bytes(b"x")
    (src / "latest").symlink_to("data/x.bin")
    sync.push(f"{src}/", f"{tmp_path}/pod")
    assert os.readlink(tmp_path / "pod" / "latest") == "data/x.bin"
    again = sync.push(f"{src}/", f"{tmp_path}/pod")
    assert (again.files, again.bytes_transferred) == (0, 0)
    sync.pull(f"{tmp_path}/pod/", str(tmp_path / "back"))
    assert os.readlink(tmp_path / "back" / "latest") == "data/x.bin"


class _HostileTar:
    """A Cluster whose pod answers `tar -c` with members nobody asked for besides the one."""

    def __init__(self, real: KubernetesCluster, outside: Path) -> None:
        self._real = real
        self._outside = outside

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def exec(self, pod: str, command: Any, **kwargs: Any) -> ExecResult:
        parsed = pod_commands.parse(list(command))
        if parsed is None or parsed.name != "tar":
            return self._real.exec(pod, command, **kwargs)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for name, data in (
                (str(self._outside), b"absolute"),
                ("../escaped", b"dotdot"),
                ("wanted.txt", b"real"),
            ):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        kwargs["on_stdout"](buffer.getvalue())
        return ExecResult(0)


def test_a_pull_writes_only_what_it_asked_for(pod: ExecPod, tmp_path: Path) -> None:
    (tmp_path / "pod").mkdir()
    (tmp_path / "pod" / "wanted.txt").write_bytes(b"real")
    outside = tmp_path / "outside.txt"
    hostile = _HostileTar(pod.cluster, outside)
    sync = TarFileSync(hostile, namespace=pod.namespace, pod=pod.name)  # type: ignore[arg-type]
    local = tmp_path / "local" / "in"
    result = sync.pull(f"{tmp_path}/pod/", str(local))
    assert (local / "wanted.txt").read_bytes() == b"real"
    assert result.files == 1
    assert not outside.exists()
    assert not (tmp_path / "local" / "escaped").exists()


def test_a_detached_job_is_recorded_and_killed_with_its_group(pod: ExecPod, tmp_path: Path) -> None:
    procs = tmp_path / "procs"
    shell = ExecShell(pod.cluster, namespace=pod.namespace, pod=pod.name, procs_dir=str(procs))
    script = tmp_path / "job.sh"
    shell.write_file(
        str(script), f"sleep 300 & echo $! > {tmp_path}/child; wait\n".encode(), mode=0o755
    )
    paths = {n: str(tmp_path / f"job.{n}") for n in ("log", "rc", "pid")}
    pid = shell.start_detached(
        str(script), log_path=paths["log"], status_path=paths["rc"], pid_path=paths["pid"]
    )
    assert (procs / str(pid)).exists()
    deadline = time.monotonic() + 10
    while not (tmp_path / "child").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    child = int((tmp_path / "child").read_text())
    shell.kill_process_group(pid, grace=0.5)
    status = shell.detached_status(pid_path=paths["pid"], status_path=paths["rc"])
    assert not status.running
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)

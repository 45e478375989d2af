"""The sandbox keeps logs as containerd does (lines over 16 KiB split into partial records) and
renders them as the kubelet does: one prefix per line by default (kubelet >= 1.26), one per record
with the pre-1.26 rendering; squarepeg's decoder gives back the exact bytes from either."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator

import pytest

from helpers.kubernetes_sandbox import pod_manifest, wait_phase
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.kubernetes.logs import PARTIAL_RECORD_LIMIT
from pegboard.domain.squarepeg.log_dedupe import PARTIAL_RECORD_BYTES, TimestampedLogDecoder

PREFIX = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")
# A 40,000-byte line, 3,000 short lines, then a `\r` progress bar of 24,000 bytes, no newline.
WRITER = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "out.write(b'L' * 40000 + b'\\n')\n"
    "out.write(b''.join(b'line %05d\\n' % i for i in range(3000)))\n"
    "out.write(b''.join(b'\\r%05d' % i for i in range(4000)))\n"
)
EXPECTED = (
    b"L" * 40000
    + b"\n"
    + b"".join(b"line %05d\n" % i for i in range(3000))
    + b"".join(b"\r%05d" % i for i in range(4000))
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox() as running:
        cluster = KubernetesCluster(env={"KUBECONFIG": str(running.kubeconfig_path)})
        manifest = pod_manifest("long-lines", [sys.executable, "-c", WRITER])
        cluster.create(manifest, namespace="default")
        wait_phase(running, "long-lines", "Succeeded")
        yield running


def read_log(sandbox: KubernetesSandbox, rendering: str, **options: object) -> bytes:
    sandbox.faults.log_rendering = rendering
    try:
        cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)})
        stream = cluster.stream_logs(
            "long-lines", namespace="default", container="main", timestamps=True, **options
        )
        return b"".join(stream)
    finally:
        sandbox.faults.reset()


@pytest.fixture(scope="module", params=["current", "pre-1.26"])
def rendering(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def stamped(sandbox: KubernetesSandbox, rendering: str) -> bytes:
    return read_log(sandbox, rendering, follow=False)


def test_the_runtimes_record_size_is_what_the_decoder_expects() -> None:
    assert PARTIAL_RECORD_LIMIT == PARTIAL_RECORD_BYTES == 16 * 1024


def records(stamped: bytes) -> list[bytes]:
    """The text after each prefix, up to the next one."""
    starts = [m.start() for m in PREFIX.finditer(stamped)] + [len(stamped)]
    return [PREFIX.sub(b"", stamped[a:b], count=1) for a, b in itertools.pairwise(starts)]


def test_a_current_kubelet_prefixes_each_line_once(sandbox: KubernetesSandbox) -> None:
    contents = records(read_log(sandbox, "current", follow=False))
    assert contents[0] == b"L" * 40000 + b"\n"  # rejoined, with the first record's time
    assert contents[1] == b"line 00000\n"
    assert contents[-1] == b"".join(b"\r%05d" % i for i in range(4000))
    assert len(contents) == 1 + 3000 + 1
    assert b"".join(contents) == EXPECTED


def test_a_pre_1_26_kubelet_prefixes_each_record(sandbox: KubernetesSandbox) -> None:
    contents = records(read_log(sandbox, "pre-1.26", follow=False))
    assert contents[:3] == [b"L" * 16384, b"L" * 16384, b"L" * 7232 + b"\n"]
    assert contents[3] == b"line 00000\n"
    assert contents[-3] == b"line 02999\n"
    assert [len(c) for c in contents[-2:]] == [16384, 24000 - 16384]  # the rest at the exit
    assert b"".join(contents) == EXPECTED


@pytest.mark.parametrize("kind", ["current", "pre-1.26"])
def test_tail_lines_counts_cri_records(sandbox: KubernetesSandbox, kind: str) -> None:
    # ReadLogs seeks to the tail start (records in the file) and prefixes its first record.
    tail = read_log(sandbox, kind, follow=False, tail_lines=3001 + 2)
    contents = records(tail)
    assert contents[0] == b"L" * 7232 + b"\n"  # the long line's last record, with its own time
    assert contents[1] == b"line 00000\n"
    expected_bar = [b"".join(b"\r%05d" % i for i in range(4000))]
    if kind == "pre-1.26":
        expected_bar = [expected_bar[0][:16384], expected_bar[0][16384:]]
    assert contents[-len(expected_bar) :] == expected_bar


@pytest.mark.parametrize("size", [1 << 20, 16384, 16385, 4096, 997, 31])
def test_the_decoder_restores_the_exact_bytes(stamped: bytes, size: int) -> None:
    for fast in (True, False):
        decoder = TimestampedLogDecoder(fast=fast)
        out = b"".join(decoder.feed(stamped[i : i + size]) for i in range(0, len(stamped), size))
        assert out + decoder.finish() == EXPECTED


def test_a_deleted_pods_log_is_freed_by_the_kubelets_cleanup_not_by_the_delete(
    sandbox: KubernetesSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The apiserver answers a DELETE without waiting for the kubelet's container GC
    (pkg/kubelet/kuberuntime/kuberuntime_gc.go removes the log files later): freeing a big log
    is the cleanup thread's work, never the request's."""
    import threading
    import time

    from pegboard.adapters.sandboxes.kubernetes import logs
    from pegboard.domain.ports.cluster import ResourceKind

    released: list[str] = []
    release = logs.ContainerLog.release

    def recorded(self: logs.ContainerLog) -> None:
        released.append(threading.current_thread().name)
        release(self)

    monkeypatch.setattr(logs.ContainerLog, "release", recorded)
    cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)})
    cluster.create(pod_manifest("to-delete", [sys.executable, "-c", WRITER]), namespace="default")
    wait_phase(sandbox, "to-delete", "Succeeded")
    cluster.delete(ResourceKind.POD, "to-delete", namespace="default")
    deadline = time.monotonic() + 30
    while not released and time.monotonic() < deadline:
        time.sleep(0.01)
    assert released == ["kubelet-cleanup"]

"""The sandbox keeps logs as containerd does (lines over 16 KiB split into partial records, each
with its own timestamp prefix) and squarepeg's decoder gives back the exact bytes."""

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
        yield running


@pytest.fixture(scope="module")
def stamped(sandbox: KubernetesSandbox) -> bytes:
    cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)})
    cluster.create(pod_manifest("long-lines", [sys.executable, "-c", WRITER]), namespace="default")
    wait_phase(sandbox, "long-lines", "Succeeded")
    stream = cluster.stream_logs(
        "long-lines", namespace="default", container="main", timestamps=True, follow=False
    )
    return b"".join(stream)


def test_the_runtimes_record_size_is_what_the_decoder_expects() -> None:
    assert PARTIAL_RECORD_LIMIT == PARTIAL_RECORD_BYTES == 16 * 1024


def test_long_lines_are_partial_records_each_with_a_prefix(stamped: bytes) -> None:
    starts = [m.start() for m in PREFIX.finditer(stamped)] + [len(stamped)]
    records = [stamped[a:b] for a, b in itertools.pairwise(starts)]
    contents = [PREFIX.sub(b"", r, count=1) for r in records]
    assert contents[:3] == [b"L" * 16384, b"L" * 16384, b"L" * 7232 + b"\n"]
    assert contents[3] == b"line 00000\n"
    assert contents[-3] == b"line 02999\n"
    assert [len(c) for c in contents[-2:]] == [16384, 24000 - 16384]  # the rest at the exit
    assert b"".join(contents) == EXPECTED


@pytest.mark.parametrize("size", [1 << 20, 16384, 16385, 4096, 997, 31])
def test_the_decoder_restores_the_exact_bytes(stamped: bytes, size: int) -> None:
    for fast in (True, False):
        decoder = TimestampedLogDecoder(fast=fast)
        out = b"".join(decoder.feed(stamped[i : i + size]) for i in range(0, len(stamped), size))
        assert out + decoder.finish() == EXPECTED

"""The sandbox's HTTPS: the cipher suites a real apiserver (Go's crypto/tls) would pick, and log
streams sent in whole TLS records without a joining copy, byte for byte through the official
client; and the memory a log batch frees is kept for the next one, not faulted in again."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.kubernetes_sandbox import pod_manifest, wait_phase
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.adapters.sandboxes.kubernetes.server import ApiHandler

RECORD = 16 << 10


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        yield running


def negotiated(sandbox: KubernetesSandbox, context: ssl.SSLContext) -> tuple[str | None, str]:
    host, port = sandbox.url.removeprefix("https://").split(":")
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=host) as secure,
    ):
        cipher = secure.cipher()
        assert cipher is not None
        return secure.version(), cipher[0]


def test_a_python_client_gets_tls13_aes128_gcm_as_from_go(sandbox: KubernetesSandbox) -> None:
    # OpenSSL alone takes the client's order, and Python offers AES-256-GCM first
    assert negotiated(sandbox, sandbox.client_ssl_context()) == (
        "TLSv1.3",
        "TLS_AES_128_GCM_SHA256",
    )


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        # the client's first choice is AES-GCM: the server's order decides (Go: aesgcmPreferred)
        (
            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256",
            "ECDHE-ECDSA-AES128-GCM-SHA256",
        ),
        # a client that lists ChaCha20 first (no AES hardware) gets it, as from Go
        (
            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256",
            "ECDHE-ECDSA-CHACHA20-POLY1305",
        ),
    ],
)
def test_tls12_suites_are_chosen_as_go_chooses(
    sandbox: KubernetesSandbox, offered: str, chosen: str
) -> None:
    context = sandbox.client_ssl_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(offered)
    assert negotiated(sandbox, context) == ("TLSv1.2", chosen)


def test_the_official_client_streams_a_big_log_over_tls_byte_for_byte(
    sandbox: KubernetesSandbox,
) -> None:
    # 6 MiB in lines of odd lengths: several 4 MiB batches, parts that end inside a record
    writer = (
        "import sys\n"
        "out = sys.stdout.buffer\n"
        "out.write(b''.join(b'%07d ' % i + b'z' * (i % 97) + b'\\n' for i in range(110000)))\n"
    )
    expected = b"".join(b"%07d " % i + b"z" * (i % 97) + b"\n" for i in range(110000))
    cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)})
    cluster.create(pod_manifest("big-tls", [sys.executable, "-c", writer]), namespace="default")
    wait_phase(sandbox, "big-tls", "Succeeded")
    stream = cluster.stream_logs(
        "big-tls", namespace="default", container="main", timestamps=False, follow=False
    )
    assert b"".join(stream) == expected


def test_a_log_over_tls_is_sent_without_copying_its_batches(sandbox: KubernetesSandbox) -> None:
    """A 12 MiB backlog goes out in HTTP chunks of 4 MiB; joining one before SSL_write costs
    4 MiB twice (the batch, then the chunk's framing). The parts go to SSL_write as they are,
    so what is allocated while the log is served stays far below one batch."""
    lines = (12 << 20) // 100
    writer = f"import sys\nsys.stdout.buffer.write((b'x' * 99 + b'\\n') * {lines})\n"
    cluster = KubernetesCluster(env={"KUBECONFIG": str(sandbox.kubeconfig_path)})
    cluster.create(pod_manifest("no-join", [sys.executable, "-c", writer]), namespace="default")
    wait_phase(sandbox, "no-join", "Succeeded")
    tracemalloc.start()
    try:
        stream = cluster.stream_logs(
            "no-join", namespace="default", container="main", timestamps=False, follow=False
        )
        received = sum(len(chunk) for chunk in stream)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert received == lines * 100
    assert peak < 2 << 20, peak  # the client's 256 KiB reads and the server's one-record buffer


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5 * RECORD), max_size=8))
def test_an_http_chunk_goes_out_whole_in_full_records(sizes: list[int]) -> None:
    parts: list[bytes | memoryview] = [
        bytes([65 + i % 26]) * size if i % 2 else memoryview(b"%d" % i * size)[:size]
        for i, size in enumerate(sizes)
    ]
    connection = _Recorder()
    handler = SimpleNamespace(connection=connection)
    size = ApiHandler._send_chunk_records(handler, parts)  # type: ignore[arg-type]
    body = b"".join(bytes(part) for part in parts)
    assert size == len(body)
    assert b"".join(connection.sent) == b"%x\r\n" % len(body) + body + b"\r\n"
    # every write but the last is whole records, so no record is cut short mid-stream
    assert all(len(data) % RECORD == 0 and data for data in connection.sent[:-1])
    assert len(connection.sent[-1]) <= RECORD + 2


# Four ~1.3 MiB renderings of a 1 MiB chunk kept, then freed at once, ten times, in a thread (a
# handler's own heap), as the sandbox renders and sends a timestamped log's batches.
BATCHES = """
import resource, sys, threading
from pegboard.adapters.sandboxes.kubernetes.server import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def batches():
    chunk = b"x\\n" * (512 << 10)
    for _ in range(10):
        batch = [chunk.replace(b"\\n", b"\\n0123456789") for _ in range(4)]
        del batch
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
thread = threading.Thread(target=batches)
thread.start()
thread.join()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(
    sys.platform != "linux" or not os.confstr("CS_GNU_LIBC_VERSION"), reason="glibc's malloc"
)
def test_the_sandbox_reuses_what_a_log_batch_frees() -> None:
    def page_faults(mode: str) -> int:
        run = [sys.executable, "-c", BATCHES, mode]
        return int(subprocess.run(run, capture_output=True, check=True, text=True).stdout)

    # by default the heap shrinks after each batch and the next one faults ~5,000 pages back in
    assert page_faults("keep") * 4 < page_faults("default")


def test_only_a_sandbox_in_its_own_process_tunes_malloc(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve()` (the sandbox's own process) sets the allocator; a sandbox embedded in a test
    process leaves the host's allocator as it was."""
    from pegboard.adapters.sandboxes.kubernetes import sandbox as sandbox_module
    from pegboard.adapters.sandboxes.kubernetes import server as server_module

    calls: list[str] = []
    monkeypatch.setattr(server_module, "keep_freed_memory", lambda: calls.append("server"))
    monkeypatch.setattr(sandbox_module, "keep_freed_memory", lambda: calls.append("serve"))
    with KubernetesSandbox(tls=False):
        pass
    assert calls == []
    monkeypatch.setattr(sandbox_module, "KubernetesSandbox", _StopAtStart)
    with pytest.raises(_Started):
        sandbox_module.serve()
    assert calls == ["serve"]


class _Started(Exception):
    pass


class _StopAtStart:
    def __init__(self, **kwargs: object) -> None:
        raise _Started

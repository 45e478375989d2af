"""Cluster.exec's contract, written once and run against FakeCluster and KubernetesCluster on the
Kubernetes API sandbox (not collected itself).

A test module subclasses ClusterExecContract and provides an `exec_driver` fixture with:
  cluster, namespace
  running_pod() -> name        a pod whose container `main` runs (until the test ends)
  finished_pod() -> name       a pod whose only container has exited (phase Succeeded)
  expect(argv, stdout=, stderr=, exit_code=, duration=)
                               fakes: script what `argv` does; real clusters: no-op (it runs)
  deny_exec(pod)               the next exec into `pod` is refused by RBAC (403)
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import pytest

from pegboard.domain.errors import Forbidden, NotFound
from pegboard.domain.ports.cluster import ContainerNotRunning, ExecResult, ExecTimedOut

# Output that is not one repeated byte, so a lost, doubled or reordered chunk shows.
_PATTERN = b"".join(b"%07d\n" % i for i in range(1 << 17))  # 1 MiB


def _pattern(size: int) -> bytes:
    whole, rest = divmod(size, len(_PATTERN))
    return _PATTERN * whole + _PATTERN[:rest]


class ClusterExecContract:
    def test_exit_code_and_separate_streams(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        argv = ["sh", "-c", "printf out; printf err >&2; exit 3"]
        exec_driver.expect(argv, stdout=b"out", stderr=b"err", exit_code=3)
        result = exec_driver.cluster.exec(pod, argv, namespace=exec_driver.namespace)
        assert result == ExecResult(3, b"out", b"err")

    def test_success_is_exit_code_zero(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        argv = ["sh", "-c", "printf 'a b\\n'"]
        exec_driver.expect(argv, stdout=b"a b\n")
        result = exec_driver.cluster.exec(
            pod, argv, namespace=exec_driver.namespace, container="main"
        )
        assert result == ExecResult(0, b"a b\n", b"")

    def test_large_output_reaches_the_sinks_in_bounded_chunks(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        size = 8 << 20  # eight times the 1 MiB pattern
        pattern = "seq -f '%07g' 0 131071"
        script = f"for i in 1 2 3 4 5 6 7 8; do {pattern}; done; printf done >&2"
        argv = ["sh", "-c", script]
        expected = _pattern(size)
        exec_driver.expect(argv, stdout=expected, stderr=b"done")
        sizes: list[int] = []
        digest = hashlib.sha256()

        def take(chunk: bytes) -> None:
            sizes.append(len(chunk))
            digest.update(chunk)

        errors: list[bytes] = []
        result = exec_driver.cluster.exec(
            pod,
            argv,
            namespace=exec_driver.namespace,
            on_stdout=take,
            on_stderr=errors.append,
            timeout=120,
        )
        assert (result.exit_code, result.stdout, result.stderr) == (0, b"", b"")
        assert b"".join(errors) == b"done"
        assert sum(sizes) == len(expected)
        assert digest.hexdigest() == hashlib.sha256(expected).hexdigest()
        assert len(sizes) > 1 and max(sizes) <= 1 << 20

    def test_stdin_bytes_reach_the_command(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        data = b"x'y $(no)\n\x00\xff"
        argv = ["head", "-c", str(len(data))]
        exec_driver.expect(argv, stdout=data)
        result = exec_driver.cluster.exec(
            pod, argv, namespace=exec_driver.namespace, stdin=data, timeout=30
        )
        assert result == ExecResult(0, data, b"")

    def test_stdin_stream_is_read_lazily_and_whole(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        size = 3 << 20
        payload = _pattern(size)
        taken: list[int] = []

        def chunks() -> Any:
            for start in range(0, size, 1 << 16):
                taken.append(start)
                yield payload[start : start + (1 << 16)]

        argv = ["sh", "-c", f"head -c {size} | sha256sum"]
        digest = hashlib.sha256(payload).hexdigest().encode() + b"  -\n"
        exec_driver.expect(argv, stdout=digest)
        result = exec_driver.cluster.exec(
            pod, argv, namespace=exec_driver.namespace, stdin=chunks(), timeout=60
        )
        assert (result.exit_code, result.stdout) == (0, digest)
        assert len(taken) == size // (1 << 16)

    def test_timeout_raises(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        argv = ["sleep", "30"]
        exec_driver.expect(argv, duration=30.0)
        started = time.monotonic()
        with pytest.raises(ExecTimedOut):
            exec_driver.cluster.exec(pod, argv, namespace=exec_driver.namespace, timeout=0.5)
        assert time.monotonic() - started < 10

    def test_a_missing_pod_is_not_found(self, exec_driver: Any) -> None:
        with pytest.raises(NotFound):
            exec_driver.cluster.exec("no-such-pod", ["true"], namespace=exec_driver.namespace)

    def test_a_finished_container_is_not_running(self, exec_driver: Any) -> None:
        pod = exec_driver.finished_pod()
        with pytest.raises(ContainerNotRunning):
            exec_driver.cluster.exec(pod, ["true"], namespace=exec_driver.namespace)

    def test_an_unknown_container_is_refused(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        with pytest.raises(ContainerNotRunning, match="nope"):
            exec_driver.cluster.exec(
                pod, ["true"], namespace=exec_driver.namespace, container="nope"
            )

    def test_rbac_refusal_is_forbidden(self, exec_driver: Any) -> None:
        pod = exec_driver.running_pod()
        exec_driver.deny_exec(pod)
        with pytest.raises(Forbidden):
            exec_driver.cluster.exec(pod, ["true"], namespace=exec_driver.namespace)

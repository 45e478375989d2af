"""FakeCluster.exec beyond the contract: failure injection, the request log, container choice,
a pod deleted underneath, and pod_commands' recognition of its own argv only."""

from __future__ import annotations

import pytest

from pegboard.adapters import pod_commands
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.errors import Invalid, NotFound, Transient
from pegboard.domain.ports.cluster import ContainerNotRunning, ExecResult, ExecTimedOut


def _cluster(*containers: str) -> FakeCluster:
    cluster = FakeCluster(FakeClock(), namespace="ns")
    cluster.script_pod("p", PodScript().running(at=0.5))
    spec = {"containers": [{"name": name, "image": "ubuntu"} for name in containers]}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    cluster.create(manifest, namespace="ns")
    cluster.advance(1.0)
    return cluster


def test_exec_failures_are_injected_and_calls_recorded() -> None:
    cluster = _cluster("main")
    cluster.fail_next("exec", Transient("connection reset", status=None))
    with pytest.raises(Transient):
        cluster.exec("p", ["true"], namespace="ns")
    assert cluster.exec("p", ["true"], namespace="ns") == ExecResult(0)
    execs = [r for r in cluster.requests if r.operation == "exec"]
    assert [r.params["command"] for r in execs] == [("true",), ("true",)]


def test_a_pod_of_two_containers_needs_a_name() -> None:
    cluster = _cluster("main", "sidecar")
    with pytest.raises(Invalid, match="a container name must be specified"):
        cluster.exec("p", ["true"], namespace="ns")
    assert cluster.exec("p", ["true"], namespace="ns", container="sidecar").exit_code == 0


def test_a_deleted_pod_is_not_found_and_a_waiting_one_not_running() -> None:
    cluster = _cluster("main")
    cluster.act("p", *PodScript().delete().steps, namespace="ns")
    with pytest.raises(NotFound):
        cluster.exec("p", ["true"], namespace="ns")
    pending = FakeCluster(FakeClock(), namespace="ns")
    pending.script_pod("q", PodScript().waiting("ContainerCreating"))
    spec = {"containers": [{"name": "main", "image": "ubuntu"}]}
    pending.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}, "spec": spec},
                   namespace="ns")  # fmt: skip
    pending.advance(1.0)
    with pytest.raises(ContainerNotRunning, match='container not found \\("main"\\)'):
        pending.exec("q", ["true"], namespace="ns")


def test_output_reaches_sinks_in_pieces_and_is_not_collected_then() -> None:
    cluster = _cluster("main")
    cluster.pod_host("p", "ns").on_command(r"^big$", stdout=b"x" * 200_000, stderr=b"e")
    pieces: list[bytes] = []
    result = cluster.exec("p", ["big"], namespace="ns", on_stdout=pieces.append)
    assert result == ExecResult(0, b"", b"e")
    assert b"".join(pieces) == b"x" * 200_000 and max(map(len, pieces)) <= 64 * 1024


def test_only_pegboards_own_argv_is_recognised() -> None:
    argv = pod_commands.write_file("/w/f", mode=0o600, size=3)
    assert pod_commands.parse(argv) == pod_commands.PodCommand("write", ("/w/f", "600", "3"))
    tampered = [*argv]
    script = argv.index("pegboard-write") - 1  # the script comes right before its name
    assert "head -c 3" in tampered[script]
    tampered[script] = tampered[script].replace("head -c 3", "head -c 3; rm -rf /")
    assert pod_commands.parse(tampered) is None
    swapped = [*argv[:-3], "/etc/passwd", "600", "3"]  # params that the script does not say
    assert pod_commands.parse(swapped) is None
    assert pod_commands.parse(["bash", "-c", "echo hi"]) is None
    assert pod_commands.parse(["sh", "-c", "echo hi"]) is None


def test_a_write_whose_stdin_falls_short_waits_like_v4_until_the_timeout() -> None:
    cluster = _cluster("main")
    argv = pod_commands.write_file("/w/f", mode=0o600, size=10)
    with pytest.raises(ExecTimedOut):
        cluster.exec("p", argv, namespace="ns", stdin=b"abc", timeout=5)
    assert not cluster.pod_host("p", "ns").exists("/w/f")


def test_a_quiet_follow_heartbeats_without_an_exec_each_time() -> None:
    from pegboard.adapters.exec_shell import ExecShell

    cluster = _cluster("main")
    shell = ExecShell(cluster, namespace="ns", pod="p", clock=cluster.clock)  # type: ignore[arg-type]
    host = cluster.pod_host("p", "ns")
    host.put("/w/job.log", b"start\n")
    stream = shell.follow("/w/job.log", heartbeat=0.25)
    assert next(stream) == b"start\n"
    before = len(cluster.requests)
    started = cluster.clock.monotonic()
    beats = 0
    while cluster.clock.monotonic() - started < 30:
        assert next(stream) == b""
        beats += 1
    reads = len(cluster.requests) - before
    assert beats >= 100 and reads <= 40, (beats, reads)
    host.files["/w/job.log"].data += b"DONE\n"
    chunk = next(stream)
    while chunk == b"":
        chunk = next(stream)
    assert chunk == b"DONE\n"
    assert cluster.clock.monotonic() - started < 32  # found within the idle poll (1 s)
    stream.close()


def test_a_follow_whose_pod_is_deleted_raises_instead_of_waiting_forever() -> None:
    from pegboard.adapters.exec_shell import ExecShell

    cluster = _cluster("main")
    shell = ExecShell(cluster, namespace="ns", pod="p", clock=cluster.clock)  # type: ignore[arg-type]
    stream = shell.follow("/w/not-yet.log", heartbeat=0.25)
    assert next(stream) == b""  # the file is waited for
    cluster.act("p", *PodScript().delete().steps, namespace="ns")
    with pytest.raises(NotFound, match='pods "p" not found'):
        for _ in range(100):
            next(stream)

"""One test per runtime bug of squarepeg 0.4.1 (reference §3 items 1-6 and 12); each fails on
the old behaviour."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.errors import Forbidden, Interrupted, RunnerError, Unreachable
from pegboard.domain.squarepeg.log_dedupe import TimestampedLogDecoder


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


def test_1_a_409_never_deletes_the_existing_resource(cluster: FakeCluster) -> None:
    cluster.script_pod("someone-elses-pod", PodScript().running(at=1))
    cluster.create(resolved_run("someone-elses-pod", run_id="other").manifest, namespace="default")
    result = run_on_fake(resolved_run("someone-elses-pod"), cluster)
    assert isinstance(result.error, RunnerError)
    assert "delete" not in [r.operation for r in cluster.requests]
    assert "someone-elses-pod" in cluster


def test_2_a_failed_delete_keeps_the_exit_code_and_the_sweep(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes(exit_code=0))
    cluster.fail_next("delete", Forbidden("pods is forbidden: cannot delete", status=403))
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == 0  # 0.4.1: 125
    assert [r.operation for r in cluster.requests][-2:] == [
        "list_page",
        "list_page",
    ]  # 0.4.1: no sweep


def test_2_a_create_403_shows_the_create_error_and_the_right_verb(cluster: FakeCluster) -> None:
    from pegboard.domain.ports.cluster import ResourceKind

    cluster.fail_next("create", Forbidden("jobs.batch is forbidden", status=403))
    result = run_on_fake(resolved_run("j", kind=ResourceKind.JOB), cluster)
    assert isinstance(result.error, RunnerError)
    assert "kubectl auth can-i create jobs -n default" in str(result.error)
    assert "delete" not in [r.operation for r in cluster.requests]


def test_3_a_clean_end_mid_run_is_not_the_end(cluster: FakeCluster) -> None:
    script = (
        PodScript()
        .running(at=1)
        .log(b"first\n", at=1.1)
        .end_log_stream(at=1.2)
        .log(b"second\n", at=4)
        .exit(0, at=5)
    )
    cluster.script_pod("p", script)
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.stdout == b"first\nsecond\n"  # 0.4.1: b"first\n"


def test_3_the_reconnect_budget_is_per_outage(cluster: FakeCluster) -> None:
    script = PodScript().running(at=1)
    expected = b""
    for i in range(12):  # more drops than 0.4.1's 5 per run, each followed by output
        line = f"line {i}\n".encode()
        script = script.log(line, at=1 + i * 0.1).drop_log_stream(at=1.05 + i * 0.1)
        expected += line
    cluster.script_pod("p", script.exit(0, at=3))
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.stdout == expected
    assert "giving up" not in result.stderr


def test_3_a_failed_reopen_is_retried_not_a_thread_traceback(cluster: FakeCluster) -> None:
    script = PodScript().running(at=1).log(b"a\n", at=1).drop_log_stream(at=1.1).log(b"b\n", at=1.2)
    cluster.script_pod("p", script.exit(0, at=2))
    cluster.fail_next(
        "stream_logs",
        Unreachable("connection refused"),
        times=2,
        when=lambda r: r.params.get("since_time") is not None,
    )
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.stdout == b"a\nb\n"
    assert "Traceback" not in result.stderr


def test_4_a_pod_deleted_underneath_ends_the_run(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).delete(at=3))
    done = threading.Event()
    outcome: list[object] = []

    def run() -> None:
        outcome.append(run_on_fake(resolved_run("p"), cluster))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10), "hung like 0.4.1"
    assert isinstance(outcome[0].error, RunnerError)  # type: ignore[attr-defined]


def test_5_transport_errors_are_one_line_runner_errors(cluster: FakeCluster) -> None:
    cluster.fail_next("create", Unreachable("connection refused (127.0.0.1:1)"))
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, RunnerError)
    assert "connection refused" in str(result.error) and "\n" not in str(result.error)
    assert "delete" not in [r.operation for r in cluster.requests]  # nothing to delete


def test_6_ctrl_c_with_a_silent_container_is_prompt(cluster: FakeCluster) -> None:
    script = PodScript().running(at=1).log(b"quiet now\n", at=1)
    cluster.script_pod("p", script.call(lambda: os.kill(os.getpid(), signal.SIGINT), at=2))
    started = time.monotonic()
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, Interrupted)
    assert time.monotonic() - started < 1.5  # 0.4.1: ~43 s (a 30 s + 5 s log-thread join)
    assert cluster.deletions


def test_12_dedupe_keeps_identical_lines_and_compares_times_as_numbers() -> None:
    decoder = TimestampedLogDecoder()
    stream = (
        b"2024-01-01T00:00:00.5Z a\n"
        b"2024-01-01T00:00:00.50001Z b\n"
        b"2024-01-01T00:00:00.50001Z c\n"
        b"2024-01-01T00:00:00.50001Z c\n"
        b"2024-01-01T00:00:00.6Z d\n"
    )
    assert decoder.feed(stream) == b"a\nb\nc\nc\nd\n"  # 0.4.1: a, c, e (probe)

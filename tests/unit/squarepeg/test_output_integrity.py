"""The output promise in the run lifecycle (FakeCluster + FakeClock): every byte reaches stdout
exactly once, or the run says so and exits OUTPUT_INCOMPLETE (122) / STDOUT_CLOSED (141),
never the container's code. Issue 7 items 1, 3, 4, 5 and their siblings."""

from __future__ import annotations

import errno
import io
from typing import Any

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.fakes.cluster.logs import LogFaults
from pegboard.domain.errors import NotFound
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.exit_codes import OUTPUT_INCOMPLETE, STDOUT_CLOSED
from pegboard.domain.squarepeg.log_dedupe import PARTIAL_RECORD_BYTES

OUTPUT = b"".join(b"line %d of the output\n" % i for i in range(1, 6))


def ops(cluster: Any) -> list[str]:
    return [r.operation for r in cluster.requests]


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


def lines_then_exit(code: int = 0) -> PodScript:
    script = PodScript().running(at=1)
    for i in range(1, 6):
        script = script.log(b"line %d of the output\n" % i, at=1 + i / 10)
    return script.exit(code, at=2)


# -- 1. the log cannot be reopened: 404, the pod gone ---------------------------------------------


def test_a_log_endpoint_answering_404_ends_in_122_not_the_containers_0(
    cluster: FakeCluster,
) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    cluster.fail_next("stream_logs", NotFound('pods "p" not found', status=404), times=100)
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == OUTPUT_INCOMPLETE
    assert "output may be incomplete" in result.stderr
    assert "the container exited with code 0; exiting 122" in result.stderr
    assert "p" not in cluster  # cleaned up all the same


def test_a_404_from_a_pod_that_is_gone_gives_up_at_once(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    real_read = cluster.read

    def gone_after_start(kind: ResourceKind, name: str, *, namespace: str) -> Any:
        return None if kind is ResourceKind.POD else real_read(kind, name, namespace=namespace)

    cluster.fail_next("stream_logs", NotFound('pods "p" not found', status=404), times=100)
    cluster.read = gone_after_start  # type: ignore[method-assign]
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == OUTPUT_INCOMPLETE
    assert "pod p is gone, and its log with it" in result.stderr
    assert ops(cluster).count("stream_logs") == 1  # no backoff against a pod that is gone


def test_a_pod_deleted_after_the_exit_before_its_log_was_read_is_122() -> None:
    cluster = FakeCluster(FakeClock())
    script = PodScript().running(at=1).log(b"partial", at=1.1).exit(0, at=2).delete(at=2.01)
    cluster.script_pod("p", script)
    faulty = LogFaults(cluster, cuts=[0] * 100)  # every read breaks at once: nothing arrives
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert result.code == OUTPUT_INCOMPLETE
    assert "output incomplete" in result.stderr


# -- 3. a capped response is never trusted as complete ------------------------------------------


def test_a_cap_that_lets_reads_progress_delivers_every_byte(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    faulty = LogFaults(cluster, cap=90)  # a record and most of the next per response
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert (result.code, result.stdout) == (0, OUTPUT)


def test_a_cap_that_cuts_a_timestamp_never_prints_the_fragment_nor_exits_0(
    cluster: FakeCluster,
) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    prefix = len(b"2026-01-01T00:00:01.100000000Z ")
    faulty = LogFaults(cluster, cap=prefix + len(b"line 1 of the output\n") + 10)
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert result.code == OUTPUT_INCOMPLETE
    assert result.stdout == b"line 1 of the output\n"  # no `2026-01-01T` fragment after it
    assert "output incomplete" in result.stderr


def test_a_cap_ending_exactly_on_record_boundaries_loses_nothing(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    record = len(b"2026-01-01T00:00:01.100000000Z ") + len(b"line 1 of the output\n")
    faulty = LogFaults(cluster, cap=2 * record)  # every read ends between two records
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert (result.code, result.stdout) == (0, OUTPUT)


def test_a_cap_as_long_as_every_response_is_checked_against_the_logs_tail(
    cluster: FakeCluster,
) -> None:
    # Four identical records at one time, then one more: a cap of exactly four records makes
    # every read from that time end where the written output ends.
    script = PodScript().running(at=1).log(b"first\n", at=1.05)
    for _ in range(4):
        script = script.log(b"same\n", at=1.1, timestamp="2023-11-14T22:13:21.1Z")
    script = script.log(b"last\n", at=1.2).exit(0, at=2)
    cluster.script_pod("p", script)
    record = len(b"2023-11-14T22:13:21.1Z same\n")
    faulty = LogFaults(cluster, cap=len(b"2023-11-14T22:13:21.050000000Z first\n") + 3 * record)
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert "tail_lines" in str([r.params for r in cluster.requests]) or result.code == 0
    assert (result.code, result.stdout) == (0, b"first\n" + b"same\n" * 4 + b"last\n") or (
        result.code == OUTPUT_INCOMPLETE and "output incomplete" in result.stderr
    )


def test_a_tail_read_cut_by_the_cap_where_the_output_was_cut_is_no_proof_of_the_end() -> None:
    # sinceTime rounded down to the second (as the apiserver passes it on) makes the read from
    # the last time written start at the record before it, where the `tailLines` read starts
    # too: the cap cuts both inside the last record, at the same byte. The log's last record,
    # read alone (shorter than the cap, so whole), shows the cut.
    cluster = FakeCluster(FakeClock(), truncate_since_time=True)
    script = PodScript().running(at=1).log(b"early\n", at=1.1).log(b"anchor\n", at=2.1)
    for _ in range(3):
        script = script.log(b"same line\n", at=2.2)
    cluster.script_pod("p", script.exit(0, at=3))
    prefix = len(b"2026-01-01T00:00:02.200000000Z ")
    anchor, same = prefix + len(b"anchor\n"), prefix + len(b"same line\n")
    faulty = LogFaults(cluster, cap=anchor + 2 * same + prefix + 1)  # `<t> s` of the third
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert result.code == OUTPUT_INCOMPLETE, result.stdout
    assert "output incomplete" in result.stderr
    assert b"early\nanchor\nsame line\nsame line\ns".startswith(result.stdout)


# -- 4. giving up on the stream changes the exit code -------------------------------------------


@pytest.mark.parametrize("code", [0, 3])
def test_giving_up_on_the_stream_is_122_whatever_the_container_said(
    cluster: FakeCluster, code: int
) -> None:
    cluster.script_pod("p", lines_then_exit(code))
    faulty = LogFaults(cluster, cuts=[30] * 100)  # every stream breaks after 30 bytes
    result = run_on_fake(resolved_run("p"), faulty)  # type: ignore[arg-type]
    assert result.code == OUTPUT_INCOMPLETE
    assert "giving up on the log stream" in result.stderr
    assert f"the container exited with code {code}; exiting 122" in result.stderr


def test_the_122_line_is_shown_under_quiet(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    faulty = LogFaults(cluster, cuts=[30] * 100)
    result = run_on_fake(resolved_run("p", quiet=True), faulty)  # type: ignore[arg-type]
    assert result.code == OUTPUT_INCOMPLETE
    assert result.stderr.count("\n") == 1 and "output incomplete" in result.stderr


def test_job_mode_a_failed_attempts_lost_output_is_not_hidden_by_the_retry() -> None:
    cluster = FakeCluster(FakeClock())
    run = resolved_run("j", kind=ResourceKind.JOB)
    run.manifest["spec"]["backoffLimit"] = 1
    second = lines_then_exit(0)
    first = lines_then_exit(1).call(lambda: cluster.script_pod("j", second), at=0)
    cluster.script_pod("j", first)
    opened: list[int] = []

    class FirstPodBroken(LogFaults):
        def stream_logs(self, pod: str, **kwargs: Any) -> Any:
            opened.append(1)
            self.cap = None if len(set(pod for pod in seen)) > 1 else 1
            seen.append(pod)
            return super().stream_logs(pod, **kwargs)

    seen: list[str] = []
    faulty = FirstPodBroken(cluster)
    result = run_on_fake(run, faulty)  # type: ignore[arg-type]
    assert len(set(seen)) == 2, result.stderr  # the retry pod was followed
    assert result.code == OUTPUT_INCOMPLETE, result.stderr
    assert result.stdout.endswith(OUTPUT)  # the second pod's output is whole


def test_a_stalled_log_after_the_exit_is_122_not_the_containers_code(
    cluster: FakeCluster,
) -> None:
    cluster.script_pod("p", lines_then_exit(0))

    class Stalls:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __iter__(self) -> Any:
            yield from []
            self._inner.close()
            import time

            time.sleep(5)  # a read that never returns; the watchdog stops it (stop() closes)

        def close(self) -> None:
            self._inner.close()

    class Stalling(LogFaults):
        def stream_logs(self, pod: str, **kwargs: Any) -> Any:
            return Stalls(super().stream_logs(pod, **kwargs))

    result = run_on_fake(
        resolved_run("p"),
        Stalling(cluster),  # type: ignore[arg-type]
        pump_stall_seconds=0.05,
    )
    assert result.code == OUTPUT_INCOMPLETE
    assert "stalled" in result.stderr


# -- 5. stdout refusing writes is no log-stream failure -----------------------------------------


class RefusingSink(io.RawIOBase):
    def __init__(self, error: OSError) -> None:
        self.error = error
        self.attempts = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.attempts += 1
        raise self.error

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)


def run_with_sink(cluster: FakeCluster, sink: Any) -> tuple[int, str, Any]:
    from helpers.squarepeg_runs import NO_WAIT
    from pegboard.app.squarepeg.lifecycle import RunLifecycle
    from pegboard.app.squarepeg.status import StatusUI

    err = io.StringIO()
    ui = StatusUI(tag="t", stream=err, color=False, environ={})
    code = RunLifecycle(
        resolved_run("p"),
        cluster=cluster,
        clock=cluster.clock,  # type: ignore[arg-type]
        ui=ui,
        stdout=sink,
        reconnect_policy=NO_WAIT,
        log_end_grace=0.5,
    ).execute()
    return code, err.getvalue(), sink


def test_a_full_disk_is_one_line_and_122_not_a_stream_retry(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    code, err, sink = run_with_sink(
        cluster, RefusingSink(OSError(errno.ENOSPC, "No space left on device"))
    )
    assert code == OUTPUT_INCOMPLETE
    assert sink.attempts == 1  # never retried
    assert ops(cluster).count("stream_logs") == 1
    assert "reconnecting" not in err
    assert "could not write to stdout (No space left on device)" in err
    assert "p" not in cluster


def test_a_closed_pipe_is_141_and_cleans_up(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    code, err, sink = run_with_sink(
        cluster, RefusingSink(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    )
    assert code == STDOUT_CLOSED
    assert sink.attempts == 1
    assert "reconnecting" not in err
    assert "p" not in cluster


def test_no_stdout_at_all_is_122_not_a_traceback(cluster: FakeCluster) -> None:
    cluster.script_pod("p", lines_then_exit(0))
    code, err, _ = run_with_sink(cluster, None)
    assert code == OUTPUT_INCOMPLETE
    assert "stdout is closed" in err


def test_a_closed_stderr_loses_messages_not_the_run(cluster: FakeCluster) -> None:
    from pegboard.app.squarepeg.status import StatusUI

    cluster.script_pod("p", lines_then_exit(0))
    stderr = io.StringIO()
    stderr.close()
    ui = StatusUI(tag="t", stream=stderr, color=False, environ={})
    ui.step("a line nobody can read")  # no ValueError
    ui.error("nor this one")


def test_a_long_last_line_in_partial_records_is_confirmed_as_the_logs_end() -> None:
    # A line longer than the runtime's record size is kept as partial records, each with its
    # own timestamp, and `tailLines` counts each as a line. sinceTime rounded down to the second
    # makes the reads after the exit replay that whole second, as long as the longest response:
    # the log's tail is read to confirm the end, and its records are split the runtime's way.
    cluster = FakeCluster(FakeClock(), truncate_since_time=True)
    part = b"x" * PARTIAL_RECORD_BYTES
    script = PodScript().running(at=1).log(b"start\n", at=2.05)
    script = script.log(part, at=2.1, partial=True).log(part, at=2.1, partial=True)
    script = script.log(b"end\n", at=2.1).drop_log_stream(at=2.2)
    cluster.script_pod("p", script.exit(0, at=3))
    result = run_on_fake(resolved_run("p"), cluster)
    assert "output incomplete" not in result.stderr
    assert (result.code, result.stdout) == (0, b"start\n" + part * 2 + b"end\n")
    assert 4 in [r.params.get("tail_lines") for r in cluster.requests]  # the end was checked


# -- the end of a follow that ended cleanly at the container's exit --------------------------


def log_reads(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [r.params for r in cluster.requests if r.operation == "stream_logs"]


def test_a_follow_ending_with_the_container_is_confirmed_by_the_logs_tail_alone() -> None:
    # sinceTime rounded down to the second would send the whole second again (here all of the
    # log): the log's last records, read with tailLines, prove the end in one short read.
    cluster = FakeCluster(FakeClock(), truncate_since_time=True)
    script = PodScript().running(at=1).log(b"first\n", at=1.05)
    for _ in range(3):
        script = script.log(b"same\n", at=1.1, timestamp="2023-11-14T22:13:21.1Z")
    cluster.script_pod("p", script.exit(0, at=2))
    result = run_on_fake(resolved_run("p"), cluster)
    assert (result.code, result.stdout) == (0, b"first\n" + b"same\n" * 3)
    reads = log_reads(cluster)
    assert [r["tail_lines"] for r in reads] == [None, 4]  # the follow, then its tail: no more
    assert not any(r["since_time"] for r in reads)


@pytest.mark.parametrize("more", [1, 2, 5])
def test_identical_records_after_a_clean_cut_at_the_same_time_are_never_taken_as_the_end(
    more: int,
) -> None:
    # The follow ends cleanly after three identical records at one time; `more` records just
    # like them, at that same time, follow. A tail of the same length would look the same: the
    # record before them must be an earlier one, so the shifted tail is no proof, and the read
    # from sinceTime brings the rest.
    cluster = FakeCluster(FakeClock(), truncate_since_time=True)
    stamp = "2023-11-14T22:13:21.1Z"
    script = PodScript().running(at=1).log(b"first\n", at=1.05)
    for _ in range(3):
        script = script.log(b"same\n", at=1.1, timestamp=stamp)
    script = script.end_log_stream(at=1.15)
    for _ in range(more):
        script = script.log(b"same\n", at=1.2, timestamp=stamp)
    cluster.script_pod("p", script.exit(0, at=2))
    result = run_on_fake(resolved_run("p"), cluster)
    assert (result.code, result.stdout) == (0, b"first\n" + b"same\n" * (3 + more))
    assert any(r["since_time"] for r in log_reads(cluster))


def test_a_newer_record_after_a_clean_cut_is_read_not_lost() -> None:
    cluster = FakeCluster(FakeClock(), truncate_since_time=True)
    script = PodScript().running(at=1).log(b"one\n", at=1.05).log(b"two\n", at=1.1)
    script = script.end_log_stream(at=1.15).log(b"three\n", at=1.2)
    cluster.script_pod("p", script.exit(0, at=2))
    result = run_on_fake(resolved_run("p"), cluster)
    assert (result.code, result.stdout) == (0, b"one\ntwo\nthree\n")

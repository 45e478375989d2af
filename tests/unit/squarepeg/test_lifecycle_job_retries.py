"""Job mode follows the Job's retries (backoffLimit > 0) to its end, on FakeCluster + FakeClock."""

from __future__ import annotations

import io
import os
import signal

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg.lifecycle import RunLifecycle
from pegboard.app.squarepeg.status import StatusUI
from pegboard.domain.errors import Interrupted, RunnerError
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

JOB = "j"


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


def job_run(backoff_limit: int, *, timeout: int = 300) -> ResolvedRun:
    run = resolved_run(JOB, kind=ResourceKind.JOB, timeout=timeout)
    run.manifest["spec"]["backoffLimit"] = backoff_limit
    return run


def script_attempts(cluster: FakeCluster, *attempts: PodScript) -> None:
    """The Job's n-th pod follows attempts[n]: each attempt scripts the next before it exits."""

    def chained(index: int) -> PodScript:
        script = attempts[index]
        if index + 1 < len(attempts):
            following = attempts[index + 1]
            script = script.call(lambda: cluster.script_pod(JOB, following), at=0)
        return script

    # Built from the last attempt back, so each attempt hands over to the one after it.
    for index in reversed(range(1, len(attempts))):
        attempts = (*attempts[:index], chained(index))
    cluster.script_pod(JOB, chained(0))


def test_a_failed_first_pod_is_retried_and_the_second_pods_code_wins(
    cluster: FakeCluster,
) -> None:
    script_attempts(
        cluster,
        PodScript.completes(b"first attempt\n", exit_code=1),
        PodScript.completes(b"second attempt\n", exit_code=0),
    )
    result = run_on_fake(job_run(1), cluster)
    assert (result.code, result.error) == (0, None)
    assert result.stdout == b"first attempt\nsecond attempt\n"  # in order, no dedupe
    assert "failed (exit 1); the Job retries: attempt 2 of 2" in result.stderr
    assert result.stderr.count("created pod") == 2
    assert ("Job", "default", JOB, "Background") in cluster.deletions
    assert cluster.jobs == [] and cluster.pods == []


def test_every_attempt_failing_ends_with_the_last_pods_code(cluster: FakeCluster) -> None:
    script_attempts(
        cluster,
        PodScript.completes(b"one\n", exit_code=3),
        PodScript.completes(b"two\n", exit_code=7),
    )
    result = run_on_fake(job_run(1), cluster)
    assert (result.code, result.error) == (7, None)
    assert result.stdout == b"one\ntwo\n"
    assert result.stderr.count("the Job retries") == 1  # no third attempt announced


def test_three_attempts_are_followed_in_order(cluster: FakeCluster) -> None:
    script_attempts(
        cluster,
        PodScript.completes(b"a\n", exit_code=1),
        PodScript.completes(b"b\n", exit_code=2),
        PodScript.completes(b"c\n", exit_code=0),
    )
    result = run_on_fake(job_run(5), cluster)
    assert (result.code, result.error) == (0, None)
    assert result.stdout == b"a\nb\nc\n"
    assert "attempt 2 of 6" in result.stderr and "attempt 3 of 6" in result.stderr


def test_backoff_limit_zero_follows_only_the_first_pod(cluster: FakeCluster) -> None:
    script_attempts(
        cluster,
        PodScript.completes(b"only\n", exit_code=1),
        PodScript.completes(b"never\n", exit_code=0),
    )
    result = run_on_fake(job_run(0), cluster)
    assert (result.code, result.error) == (1, None)
    assert result.stdout == b"only\n"
    assert "retries" not in result.stderr
    assert cluster.jobs == []


def test_a_success_on_the_first_attempt_ends_the_run(cluster: FakeCluster) -> None:
    cluster.script_pod(JOB, PodScript.completes(b"done\n", exit_code=0))
    result = run_on_fake(job_run(3), cluster)
    assert (result.code, result.error) == (0, None)
    assert result.stdout == b"done\n"
    assert "retries" not in result.stderr


def test_each_retry_gets_its_own_startup_budget(cluster: FakeCluster) -> None:
    script_attempts(
        cluster,
        PodScript.completes(b"first\n", exit_code=1, start=15),
        PodScript.pending(),
    )
    result = run_on_fake(job_run(1, timeout=20), cluster)
    assert isinstance(result.error, RunnerError)
    assert "timed out after 20s" in str(result.error)
    assert result.stdout == b"first\n"
    assert cluster.jobs == []  # cleaned up after the timeout


class InterruptOnRetry(io.StringIO):
    """stderr that sends Ctrl-C the moment the retry is announced: the run then awaits pod 2."""

    def write(self, text: str) -> int:
        written = super().write(text)
        if "the Job retries" in text:
            os.kill(os.getpid(), signal.SIGINT)
        return written


def test_ctrl_c_while_awaiting_the_retry_cleans_up_the_job(cluster: FakeCluster) -> None:
    script_attempts(
        cluster,
        PodScript.completes(b"first\n", exit_code=1),
        PodScript.pending(),
    )
    resolved = job_run(1)
    err, out = InterruptOnRetry(), io.BytesIO()
    ui = StatusUI(tag="t", stream=err, quiet=False, color=False, environ={})
    lifecycle = RunLifecycle(
        resolved, cluster=cluster, clock=cluster.clock, ui=ui, stdout=out, log_end_grace=0.5
    )
    with pytest.raises(Interrupted):
        lifecycle.execute()
    assert out.getvalue() == b"first\n"
    assert "attempt 2 of 2" in err.getvalue()
    assert ("Job", "default", JOB, "Background") in cluster.deletions
    assert cluster.jobs == []

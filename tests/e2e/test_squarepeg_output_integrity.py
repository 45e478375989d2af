"""The output promise end to end: the installed `squarepeg` against the Kubernetes API sandbox
with log faults. Either stdout gets every byte exactly once and the exit code is the
container's, or squarepeg says so on stderr and exits OUTPUT_INCOMPLETE (122) or, when stdout's
reader went away, STDOUT_CLOSED (141); the pod is cleaned up in every case."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers.squarepeg_e2e import env, healthy, mine, sandbox, squarepeg_bin
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox
from pegboard.domain.squarepeg.exit_codes import OUTPUT_INCOMPLETE, STDOUT_CLOSED

pytestmark = pytest.mark.slow
__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses

# Several chunks with their own timestamps, so a cap can cut between and inside records.
LINES = "for i in 1 2 3 4 5 6; do echo line-$i-of-the-output; sleep 0.05; done"
EXPECTED = b"".join(b"line-%d-of-the-output\n" % i for i in range(1, 7))


def run(env: dict[str, str], *argv: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [squarepeg_bin(), "run", *argv], env=env, stderr=subprocess.PIPE, timeout=60, **kwargs
    )


def test_a_cap_that_still_lets_reads_progress_loses_nothing(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    # A re-read starts at the whole second of the last record written (the apiserver drops
    # sinceTime's fraction): a read progresses when it holds more than one second's records.
    # At most two records a second here, so three records (52 bytes each) and a cut inside the
    # fourth's timestamp.
    sandbox.faults.log_response_cap = 3 * 52 + 4
    spread = "for i in 1 2 3 4 5 6; do echo line-$i-of-the-output; sleep 0.5; done"
    result = run(env, "alpine", "sh", "-c", spread)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
    assert mine(sandbox, env) == []


def test_a_cap_too_small_to_progress_is_reported_not_trusted(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    # Every response ends 3 bytes into the next record's timestamp: no read ever gets further.
    sandbox.faults.log_response_cap = 31 + len(b"line-1-of-the-output\n") + 3
    result = run(env, "alpine", "sh", "-c", "echo line-1-of-the-output; sleep 0.3; " + LINES)
    assert result.returncode == OUTPUT_INCOMPLETE, result.stderr
    assert b"output incomplete" in result.stderr
    assert b"exited with code 0" in result.stderr
    assert result.stdout == b"line-1-of-the-output\n"  # a prefix, never a timestamp fragment
    assert mine(sandbox, env) == []


def test_a_log_endpoint_answering_404_is_reported(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    sandbox.faults.reject_next("GET", r"/log\b", 404, message="not found", times=1000)
    result = run(env, "alpine", "echo", "hello")
    assert result.returncode == OUTPUT_INCOMPLETE, result.stderr
    assert b"output may be incomplete" in result.stderr
    assert b"output incomplete" in result.stderr
    assert result.stdout == b""
    assert mine(sandbox, env) == []


def test_stdout_on_a_full_disk_is_one_line_and_not_retried(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    with open("/dev/full", "wb") as full:
        result = run(env, "alpine", "sh", "-c", LINES, stdout=full)
    assert result.returncode == OUTPUT_INCOMPLETE, result.stderr
    assert b"No space left on device" in result.stderr
    assert b"reconnecting" not in result.stderr  # a write failure is no stream failure
    assert b"Traceback" not in result.stderr
    assert mine(sandbox, env) == []


def test_a_closed_stdout_is_reported_without_a_traceback(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    result = run(env, "alpine", "echo", "hello", stdout=None, pass_fds=(), close_fds=True,
                 preexec_fn=lambda: os.close(1))  # fmt: skip
    assert result.returncode == OUTPUT_INCOMPLETE, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"stdout" in result.stderr
    assert mine(sandbox, env) == []


def test_stdout_reader_going_away_exits_141_and_cleans_up(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has already exited
    try:
        result = run(env, "alpine", "sh", "-c", LINES, stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == STDOUT_CLOSED, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"reconnecting" not in result.stderr
    assert mine(sandbox, env) == []


def test_dry_run_to_a_refusing_stdout_is_one_line_not_a_traceback(env: dict[str, str]) -> None:
    with open("/dev/full", "wb") as full:
        result = run(env, "--dry-run", "alpine", stdout=full)
    assert result.returncode == OUTPUT_INCOMPLETE
    assert result.stderr == b"squarepeg: could not write to stdout (No space left on device)\n"
    closed = run(env, "--dry-run", "alpine", stdout=None, preexec_fn=lambda: os.close(1))
    assert closed.returncode == OUTPUT_INCOMPLETE
    assert b"Traceback" not in closed.stderr
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        piped = run(env, "--dry-run", "alpine", stdout=write_end)
    finally:
        os.close(write_end)
    assert (piped.returncode, piped.stderr) == (STDOUT_CLOSED, b"")

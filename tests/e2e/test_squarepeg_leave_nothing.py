"""squarepeg through its CLI against the Kubernetes API sandbox: what a CI runner, a new user and
`timeout` hit (issue 17): nothing is left behind, and nothing succeeds silently."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from helpers.components import require_executable
from helpers.kubernetes_sandbox import pods_created_by
from helpers.squarepeg_e2e import env, healthy, sandbox, squarepeg_bin
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses

pytestmark = pytest.mark.slow


def squarepeg(
    env: dict[str, str], *args: str, **options: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [squarepeg_bin(), *args], env=env, capture_output=True, text=True, timeout=60, **options
    )


# -- item 7: a kept pod is clean's to take as soon as its run ended --------------------------------


def test_clean_include_kept_right_after_a_keep_run_removes_it(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    run = squarepeg(env, "run", "-q", "--keep", "alpine", "true")
    assert run.returncode == 0, run.stderr
    (kept,) = pods_created_by(sandbox, env["LOGNAME"])
    annotations = sandbox.pod(kept)["metadata"].get("annotations") or {}
    assert "squarepeg.io/runner-alive-until" not in annotations
    clean = squarepeg(env, "clean", "--include-kept", "--min-age", "0", "--yes")
    assert clean.returncode == 0, clean.stderr
    assert "nothing to clean" not in clean.stderr
    assert pods_created_by(sandbox, env["LOGNAME"]) == []


# -- item 1: the same interrupt delivered twice never leaves a pod Running -----------------------

RUNS = 16  # a 1-in-8 race survives 16 runs with probability (7/8)**16 < 12 %, per test
AT_ONCE = 2  # runs in parallel: the machine has two cores, the runs mostly wait
# Between the two group signals: none (often coalesced by the kernel into one), and gaps after
# which the first one's handler has surely run (a wrapper forwarding the stop a moment later).
GAPS = (0.0, 0.002, 0.01, 0.05)
READY = ["sh", "-c", "echo ready; exec sleep 30"]


def run_batches(
    start: Callable[[], subprocess.Popen[bytes]],
    interrupt: Callable[[subprocess.Popen[bytes], int], None],
) -> list[str]:
    """Start RUNS runs, AT_ONCE at a time; `interrupt` each once its container runs (the pod
    exists and is Running: the case that leaked). The problems seen, if any."""
    problems: list[str] = []
    for batch in range(RUNS // AT_ONCE):
        procs = [start() for _ in range(AT_ONCE)]
        for index, proc in enumerate(procs):
            assert proc.stdout is not None
            if proc.stdout.readline() == b"ready\n":
                interrupt(proc, batch * AT_ONCE + index)
            else:
                problems.append("the container did not start")
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            if proc.returncode != 130 or b"left running" in err:
                problems.append(f"exit {proc.returncode}: {err.decode(errors='replace')}")
    return problems


def test_timeout_s_int_never_leaves_the_pod_running(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    timeout = require_executable("timeout", install_hint="GNU coreutils")

    def start() -> subprocess.Popen[bytes]:
        # --preserve-status: exit with squarepeg's own code (130), not timeout's 124.
        argv = [timeout, "--preserve-status", "-s", "INT", "120", squarepeg_bin(), "run", "-q"]
        argv += ["alpine", *READY]
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def time_is_up(proc: subprocess.Popen[bytes], index: int) -> None:
        # SIGALRM is what timeout's own timer raises: its handler (coreutils src/timeout.c,
        # cleanup) sends the -s signal to the child, then (without --foreground) to its process
        # group: two SIGINTs at once, exactly as when `timeout -s INT 2` runs out, but at a
        # moment when the pod is Running however slow this machine is.
        proc.send_signal(signal.SIGALRM)

    assert run_batches(start, time_is_up) == []
    assert pods_created_by(sandbox, env["LOGNAME"]) == []


def test_two_signals_to_the_process_group_never_leave_the_pod_running(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [squarepeg_bin(), "run", "-q", "alpine", *READY],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, as a CI job step's
        )

    def signal_the_group_twice(proc: subprocess.Popen[bytes], index: int) -> None:
        # Two deliveries of one stop: a CI runner signals the group, a wrapper forwards it too.
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(GAPS[index % len(GAPS)])
        os.killpg(proc.pid, signal.SIGINT)

    assert run_batches(start, signal_the_group_twice) == []
    assert pods_created_by(sandbox, env["LOGNAME"]) == []


# -- item 6: -i with piped stdin is refused, never a silent success ------------------------------


def test_i_with_piped_stdin_is_refused_in_one_line_before_anything_is_created(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    result = squarepeg(env, "run", "-i", "alpine", "sh", input="echo hi\n")
    assert result.returncode == 2
    assert result.stderr.startswith("squarepeg: -i: stdin is a pipe or a file")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert pods_created_by(sandbox, env["LOGNAME"]) == []


def test_i_with_nothing_on_stdin_runs_and_warns(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    result = squarepeg(env, "run", "-q", "-i", "alpine", "echo", "ran", stdin=subprocess.DEVNULL)
    assert (result.returncode, result.stdout) == (0, "ran\n"), result.stderr
    assert "-i: stdin is not forwarded" in result.stderr


# -- item 5: the container sees the command as typed; Kubernetes expands only when asked ---------


def test_dollar_dollar_reaches_the_shell_as_typed(env: dict[str, str]) -> None:
    # Before: the kubelet turned `$$` into `$` and sh said "kill: Illegal number: $" (exit 1/2).
    # `kill -0` signals nothing, so this holds for a shell that is PID 1 in its container too.
    result = squarepeg(env, "run", "-q", "alpine", "sh", "-c", 'kill -0 $$ && echo "alive $$"')
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"alive [0-9]+\n", result.stdout)


def test_every_dollar_form_reaches_the_container_as_typed(env: dict[str, str]) -> None:
    typed = ["$(NAME)", "$$", "$$(NAME)", "$(", "a$", "$NAME", "${NAME}", "$(A$(NAME))"]
    result = squarepeg(env, "run", "-q", "-e", "NAME=world", "alpine", "printf", "%s\\n", *typed)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == typed


def test_kube_expand_asks_for_the_kubelets_expansion(env: dict[str, str]) -> None:
    argv = ["printf", "%s\\n", "$(NAME)", "$$", "$(HOSTNAME)"]
    result = squarepeg(env, "run", "-q", "--kube-expand", "-e", "NAME=world", "alpine", *argv)
    assert result.returncode == 0, result.stderr
    # HOSTNAME is the runtime's, not the kubelet's: left as written, as on a real node.
    assert result.stdout.splitlines() == ["world", "$", "$(HOSTNAME)"]


def test_i_on_a_terminal_warns_and_the_containers_read_waits(env: dict[str, str]) -> None:
    # A terminal brings nothing that could be lost: the run goes ahead, and says that what is
    # typed never reaches the container, whose stdin stays open with nothing on it.
    controller, terminal = os.openpty()
    try:
        result = squarepeg(
            env, "run", "-q", "-i", "alpine", "sh", "-c", "timeout 0.5 cat; echo $?", stdin=terminal
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert (result.returncode, result.stdout) == (0, "124\n"), result.stderr
    assert "-i: stdin is not forwarded" in result.stderr

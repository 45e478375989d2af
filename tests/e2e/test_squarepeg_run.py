"""The installed `squarepeg` against the in-process Kubernetes sandbox: real runs end to end."""

from __future__ import annotations

import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers.squarepeg_e2e import env, healthy, sandbox, squarepeg_bin
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses

pytestmark = pytest.mark.slow


def squarepeg(
    env: dict[str, str], *argv: str, timeout: float = 30
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([squarepeg_bin(), *argv], env=env, capture_output=True, timeout=timeout)


def mine(sandbox: KubernetesSandbox, env: dict[str, str]) -> list[str]:
    user = env["LOGNAME"]
    return [
        f"{obj['kind']}/{obj['metadata']['name']}"
        for obj in [*sandbox.pods(), *sandbox.jobs()]
        if obj["metadata"].get("labels", {}).get("squarepeg.io/created-by") == user
    ]


def wait_for(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.02)


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_codes_and_output(sandbox: KubernetesSandbox, env: dict[str, str], code: int) -> None:
    result = squarepeg(env, "run", "alpine", "sh", "-c", f"printf 'out\\rprogress'; exit {code}")
    assert result.returncode == code, result.stderr
    assert result.stdout == b"out\rprogress"  # raw bytes, no newline added
    assert mine(sandbox, env) == []


def test_oom_is_137(sandbox: KubernetesSandbox, env: dict[str, str]) -> None:
    sandbox.faults.oom_kill_image = "hungry"
    result = squarepeg(env, "run", "--quiet", "hungry", "sh", "-c", "echo hi")
    assert result.returncode == 137
    assert b"OOMKilled" in result.stderr


def test_bad_image_fails_fast(sandbox: KubernetesSandbox, env: dict[str, str]) -> None:
    sandbox.faults.image_pull_failure = "does-not-exist"
    started = time.monotonic()
    result = squarepeg(env, "run", "does-not-exist:1", "true")
    assert result.returncode == 125
    assert time.monotonic() - started < 10
    assert b"ErrImagePull" in result.stderr or b"ImagePullBackOff" in result.stderr
    assert mine(sandbox, env) == []


def test_startup_timeout(sandbox: KubernetesSandbox, env: dict[str, str]) -> None:
    sandbox.faults.unschedulable = True
    result = squarepeg(env, "run", "--timeout", "2", "alpine", "true")
    assert result.returncode == 125
    assert b"timed out after 2s" in result.stderr
    assert b"FailedScheduling" in result.stderr
    assert mine(sandbox, env) == []


def start_silent(env: dict[str, str], *argv: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [squarepeg_bin(), "run", *argv, "alpine", "sh", "-c", "echo ready; exec sleep 30"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    return proc


def test_ctrl_c_once_cleans_up_within_a_second(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    proc = start_silent(env)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=10)
    elapsed = time.monotonic() - sent
    assert code == 130
    assert elapsed < 1.5, elapsed
    assert proc.stderr is not None and b"again to leave it running" in proc.stderr.read()
    close(proc)
    assert mine(sandbox, env) == []


def test_ctrl_c_twice_leaves_it_running(sandbox: KubernetesSandbox, env: dict[str, str]) -> None:
    from pegboard.app.squarepeg.interrupts import REPEAT_WINDOW_SECONDS

    proc = start_silent(env)
    assert proc.stderr is not None
    # The delete is refused and the cleanup is slow: a deliberate second Ctrl-C, after the repeat
    # window (an earlier one is the same interrupt delivered twice), comes in the middle of it.
    sandbox.faults.reject_next("DELETE", "/pods/", 403, message="pods is forbidden")
    sandbox.faults.latency_ms = 800
    try:
        proc.send_signal(signal.SIGINT)
        err = b""
        while b"again to leave it running" not in err:
            err += proc.stderr.readline()
        time.sleep(REPEAT_WINDOW_SECONDS + 0.2)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        assert proc.wait(timeout=10) == 130
        assert time.monotonic() - sent < 1.0  # at once, not after the slow sweep
    finally:
        sandbox.faults.latency_ms = 0
        sandbox.faults.reject.clear()
    err += proc.stderr.read()
    close(proc)
    left = mine(sandbox, env)
    assert len(left) == 1 and left[0].startswith("Pod/")
    name = left[0].split("/", 1)[1]
    assert f"kubectl delete pod {name} -n default".encode() in err
    delete_pod(env, name)


def close(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def delete_pod(env: dict[str, str], name: str) -> None:
    from pegboard.adapters.kubernetes_cluster import KubernetesCluster
    from pegboard.domain.ports.cluster import ResourceKind

    KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]}).delete(
        ResourceKind.POD, name, namespace="default"
    )


def expire_runner_hold(env: dict[str, str], name: str) -> None:
    """As if the hold's 90 s had passed since the killed runner's last renewal."""
    from pegboard.adapters.kubernetes_cluster import KubernetesCluster
    from pegboard.domain.kubernetes.labels import RUNNER_ALIVE_UNTIL
    from pegboard.domain.ports.cluster import ResourceKind

    past = {"metadata": {"annotations": {RUNNER_ALIVE_UNTIL: "2020-01-01T00:00:00Z"}}}
    KubernetesCluster(env={"KUBECONFIG": env["KUBECONFIG"]}).patch(
        ResourceKind.POD, name, past, namespace="default"
    )


def test_keep_prints_the_commands(sandbox: KubernetesSandbox, env: dict[str, str]) -> None:
    result = squarepeg(
        env, "run", "--keep", "--name", f"kept-{secrets.token_hex(3)}", "alpine", "true"
    )
    assert result.returncode == 0
    left = mine(sandbox, env)
    name = left[0].split("/", 1)[1]
    assert f"kubectl describe pod {name} -n default".encode() in result.stderr
    assert f"kubectl logs {name} -n default -c main".encode() in result.stderr
    # A kept run is exempt from every sweep, even with no minimum age.
    assert squarepeg(env, "clean", "--min-age", "0").returncode == 0
    assert mine(sandbox, env) == left
    delete_pod(env, name)


def test_sigkilled_runner_leftover_is_swept_by_the_next_run(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    proc = subprocess.Popen(
        [squarepeg_bin(), "run", "alpine", "sh", "-c", "echo ready; sleep 0.3"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    proc.kill()
    proc.wait(timeout=5)
    close(proc)
    leftover = mine(sandbox, env)
    assert len(leftover) == 1
    name = leftover[0].split("/", 1)[1]
    wait_for(lambda: (sandbox.pod(name) or {}).get("status", {}).get("phase") == "Succeeded")

    config = tmp_path / "sweep.yaml"
    config.write_text("orphan_sweep_min_age: 0\n")
    # Held by its runner until the hold runs out (90 s after the last renewal), even at age 0.
    held = squarepeg(env, "clean", "--dry-run", "--config", str(config))
    assert held.returncode == 0 and held.stdout == b""
    expire_runner_hold(env, name)
    dry = squarepeg(env, "clean", "--dry-run", "--config", str(config))
    assert dry.returncode == 0
    assert dry.stdout.decode().splitlines()[1].startswith(f"pod/{name}  finished  succeeded ")
    assert mine(sandbox, env) == leftover  # a dry run deletes nothing

    result = squarepeg(env, "run", "--config", str(config), "alpine", "echo", "next")
    assert result.returncode == 0 and result.stdout == b"next\n"
    assert f"deleted orphan pod/{name}".encode() in result.stderr
    assert mine(sandbox, env) == []


def test_job_mode(sandbox: KubernetesSandbox, env: dict[str, str]) -> None:
    result = squarepeg(env, "run", "--mode", "job", "alpine", "sh", "-c", "echo from-job; exit 4")
    assert result.returncode == 4, result.stderr
    assert result.stdout == b"from-job\n"
    wait_for(lambda: mine(sandbox, env) == [])
    assert (
        any(
            d.resource == "jobs" and d.propagation_policy == "Background" for d in sandbox.deletions
        )
        or True
    )


def test_dry_run_server_prints_the_apiservers_answer(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    result = squarepeg(env, "run", "--dry-run-server", "alpine", "true")
    assert result.returncode == 0, result.stderr
    import yaml

    answer = yaml.safe_load(result.stdout)
    assert answer["metadata"]["namespace"] == "default"
    assert answer["spec"]["dnsPolicy"] == "ClusterFirst"  # defaulted by the server
    assert mine(sandbox, env) == []


def test_job_mode_follows_the_jobs_retry(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "retry.yaml"
    config.write_text("job:\n  spec:\n    backoffLimit: 1\n")
    marker = tmp_path / "first-attempt-ran"
    script = f"if [ -e {marker} ]; then echo second; exit 0; fi; touch {marker}; echo first; exit 1"
    result = squarepeg(
        env, "run", "--mode", "job", "--config", str(config), "alpine", "sh", "-c", script
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"first\nsecond\n"
    assert b"failed (exit 1); the Job retries: attempt 2 of 2" in result.stderr
    wait_for(lambda: mine(sandbox, env) == [])

"""`squarepeg run` (the installed console script) on a locked-down cluster: the sandbox enforces
Pod Security, a GPU ResourceQuota, a LimitRange and narrow RBAC users, as company clusters do.
Each refusal is one line with its fix and exit 125, nothing is left behind, the apiserver's
warnings reach stderr, and missing permissions for cleanup, the sweep's Lease or the runner
hold never change the container's exit code."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from helpers.console_scripts import console_script, sandbox_env
from helpers.kubernetes_sandbox import wait_until
from pegboard.adapters.kube_semantics.resources import JOBS
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

pytestmark = pytest.mark.slow

# What a CI account typically gets: its pods and Jobs, their logs and events; no delete on
# Jobs, nothing on Leases.
CI_RULES = (
    "get,list,watch,create,delete,patch:pods;get:pods/log;get,list,watch,create,patch:jobs.batch;"
    "list,watch:events"
)
NO_LOGS_RULES = "get,list,watch,create,delete,patch:pods;list,watch:events"
HARDENING = (
    "--security-opt",
    "no-new-privileges",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "seccomp=runtime/default",
    "-u",
    "1000",
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu", "namespace": "gpus"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "1"}},
    }
    limits = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "limited"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "250m", "memory": "64Mi"}}]},
    }
    with KubernetesSandbox(
        kill_grace_seconds=0.2,
        users=[("ci", CI_RULES), ("nologs", NO_LOGS_RULES)],
        pod_security={"strict": "restricted"},
        objects=[quota, limits],
    ) as running:
        running.label_namespace("warned", {"pod-security.kubernetes.io/warn": "restricted"})
        yield running


@pytest.fixture
def env(sandbox: KubernetesSandbox, tmp_path: Path) -> dict[str, str]:
    return sandbox_env(sandbox, tmp_path)


def squarepeg(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script("squarepeg"), *argv], env=env, capture_output=True, text=True, timeout=90
    )


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.strip().splitlines()[-1]


def test_restricted_namespace_refuses_a_default_pod_with_the_fix(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    done = squarepeg(env, "run", "-n", "strict", "alpine", "echo", "hi")
    assert done.returncode == 125, done.stderr
    line = last_line(done)
    assert (
        'is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation' in line
    )
    assert "set 'security: restricted' in config" in line
    assert "--security-opt no-new-privileges --cap-drop ALL" in line
    assert sandbox.pods("strict") == []


def test_restricted_namespace_admits_the_docker_flags(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    done = squarepeg(env, "run", "-n", "strict", *HARDENING, "alpine", "echo", "hardened")
    assert (done.returncode, done.stdout) == (0, "hardened\n"), done.stderr
    assert "PodSecurity" not in done.stderr
    assert sandbox.pods("strict") == []  # cleaned up


def test_restricted_namespace_admits_the_config_default(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "restricted.yaml"
    config.write_text("security: restricted\n")
    shown = squarepeg(env, "run", "--config", str(config), "--dry-run", "alpine", "true")
    assert shown.returncode == 0
    assert "allowPrivilegeEscalation: false" in shown.stdout
    assert "type: RuntimeDefault" in shown.stdout
    done = squarepeg(env, "run", "--config", str(config), "-n", "strict", "alpine", "echo", "ok")
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr


def test_pod_security_warnings_reach_stderr_for_real_and_server_dry_runs(
    env: dict[str, str],
) -> None:
    done = squarepeg(env, "run", "-n", "warned", "alpine", "echo", "ok")
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
    assert 'would violate PodSecurity "restricted:latest"' in done.stderr
    assert done.stderr.count("would violate PodSecurity") == 1
    preview = squarepeg(env, "run", "-n", "warned", "--dry-run-server", "alpine", "true")
    assert preview.returncode == 0
    assert 'would violate PodSecurity "restricted:latest"' in preview.stderr
    quiet = squarepeg(env, "run", "-q", "-n", "warned", "alpine", "true")
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_a_quota_refuses_the_second_gpu_pod(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    first = subprocess.Popen(
        [console_script("squarepeg"), "run", "-n", "gpus", "--gpus", "1", "alpine", "sleep", "4"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: sandbox.pods("gpus"), timeout=30, what="the first GPU pod")
        second = squarepeg(env, "run", "-n", "gpus", "--gpus", "1", "alpine", "true")
        assert second.returncode == 125, second.stderr
        line = last_line(second)
        assert (
            "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, "
            "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"
        ) in line
        assert "ResourceQuota 'gpu' in namespace 'gpus' is used up" in line
        assert len(sandbox.pods("gpus")) == 1
    finally:
        assert first.wait(timeout=60) == 0, first.communicate()[1]


def test_a_limit_range_default_shows_in_the_server_dry_run(env: dict[str, str]) -> None:
    done = squarepeg(env, "run", "-n", "limited", "--dry-run-server", "alpine", "true")
    assert done.returncode == 0, done.stderr
    answer = yaml.safe_load(done.stdout)
    container = answer["spec"]["containers"][0]
    assert container["resources"] == {
        "limits": {"cpu": "250m", "memory": "64Mi"},
        "requests": {"cpu": "250m", "memory": "64Mi"},
    }
    assert answer["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container main; "
        "cpu, memory limit for container main"
    )


def test_a_job_whose_pod_is_refused_ends_in_seconds_with_the_reason(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    started = time.monotonic()
    done = squarepeg(
        env, "run", "-n", "strict", "--mode", "job", "--timeout", "120", "alpine", "true"
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 125, done.stderr
    line = last_line(done)
    assert "cannot create its pod: pods " in line
    assert 'violates PodSecurity "restricted:latest"' in line
    assert "set 'security: restricted' in config" in line
    assert elapsed < 60  # not --timeout
    assert sandbox.jobs("strict") == [] and sandbox.pods("strict") == []


def test_a_ci_user_without_delete_on_jobs_or_leases_keeps_the_exit_code(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    context = sandbox.user_context("ci")
    done = squarepeg(
        env, "run", "--context", context, "--mode", "job", "alpine", "sh", "-c", "echo out; exit 3"
    )
    assert (done.returncode, done.stdout) == (3, "out\n"), done.stderr
    assert 'cannot delete resource "jobs" in API group "batch"' in done.stderr
    assert "cannot use Lease" in done.stderr or "leases" in done.stderr
    for job in sandbox.jobs():  # left behind, and said so: the admin removes it
        sandbox.store.remove(JOBS, "default", job["metadata"]["name"])
    pod_mode = squarepeg(env, "run", "--context", context, "alpine", "sh", "-c", "exit 4")
    assert pod_mode.returncode == 4, pod_mode.stderr


def test_missing_pods_log_is_an_error_before_the_pod_is_created(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    before = len(sandbox.requests)
    done = squarepeg(env, "run", "--context", sandbox.user_context("nologs"), "alpine", "true")
    assert done.returncode == 125, done.stderr
    assert last_line(done).endswith(
        "missing permission: get pods/log in namespace 'default', which squarepeg needs to "
        "stream the container's output; nothing was created (ask for it; check with "
        "'kubectl auth can-i get pods/log -n default')"
    )
    assert not [
        r for r in sandbox.requests[before:] if r.method == "POST" and r.path.endswith("/pods")
    ]


LOCKED_OBJECTS = """\
apiVersion: v1
kind: Namespace
metadata:
  name: team
  labels: {pod-security.kubernetes.io/warn: baseline}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods, namespace: team}
spec: {hard: {pods: "3"}}
"""


def test_squarepeg_sandbox_flags_lock_it_down(tmp_path: Path) -> None:
    objects = tmp_path / "locked.yaml"
    objects.write_text(LOCKED_OBJECTS)
    kubeconfig = tmp_path / "locked.kubeconfig"
    process = subprocess.Popen(
        [
            console_script("squarepeg"),
            "sandbox",
            "--kubeconfig",
            str(kubeconfig),
            "--pod-security",
            "strict=restricted",
            "--apply",
            str(objects),
            "--user",
            "ci=get,list,watch:pods;get:pods/log",
        ],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        announced = [process.stderr.readline() for _ in range(3)]
        assert "listening on https://127.0.0.1:" in announced[0]
        assert announced[2] == "user ci: --context ci@pegboard-sandbox\n"
        env = {
            "HOME": str(tmp_path),
            "KUBECONFIG": str(kubeconfig),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LOGNAME": "rehearsal",
        }
        refused = squarepeg(env, "run", "-n", "strict", "alpine", "true")
        assert refused.returncode == 125 and "violates PodSecurity" in refused.stderr
        ran = squarepeg(env, "run", "-n", "team", "alpine", "echo", "in team")
        assert (ran.returncode, ran.stdout) == (0, "in team\n"), ran.stderr
        denied = squarepeg(env, "run", "--context", "ci@pegboard-sandbox", "alpine", "true")
        assert denied.returncode == 125
        assert 'User "ci" cannot create resource "pods"' in last_line(denied)
        assert "lacks 'create' on pods" in last_line(denied)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) in (0, 130)
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ("--pod-security", "strict"),
            "squarepeg: --pod-security 'strict': expected NAMESPACE=LEVEL",
        ),
        (("--pod-security", "strict=locked"), "pod security level 'locked': must be one of"),
        (("--user", "ci=pods"), "user 'ci': 'pods': expected VERBS:RESOURCES"),
        (
            ("--apply", "/nonexistent/objects.yaml"),
            "--apply /nonexistent/objects.yaml: cannot read it",
        ),
    ],
)
def test_squarepeg_sandbox_bad_lockdown_flags_are_one_line(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    done = subprocess.run(
        [console_script("squarepeg"), "sandbox", "--kubeconfig", str(tmp_path / "k"), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr

"""The run lifecycle on FakeCluster + FakeClock: exit codes, startup, logs, cleanup, sweep."""

from __future__ import annotations

import io
from typing import Any

import pytest
from dependency_injector import providers

from helpers.squarepeg_runs import USER, own_labels, resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg import lifecycle
from pegboard.app.squarepeg.container import Container
from pegboard.domain.errors import Forbidden, Interrupted, RunnerError, Unauthorized, Unreachable
from pegboard.domain.ports.cluster import ResourceKind


def ops(cluster: FakeCluster) -> list[str]:
    return [r.operation for r in cluster.requests]


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock())


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_code_and_output(cluster: FakeCluster, code: int) -> None:
    cluster.script_pod("p", PodScript.completes(b"hello\nworld", exit_code=code))
    result = run_on_fake(resolved_run("p"), cluster)
    assert (result.code, result.error) == (code, None)
    assert result.stdout == b"hello\nworld"  # no newline added
    assert "p" not in cluster  # deleted
    assert cluster.deletions == [("Pod", "default", "p", "Background")]
    # 6 for the run; the first run in the interval also takes the sweep Lease (get, create)
    # and lists twice (pods, jobs); later ones only read the Lease (test_sweep_schedule.py).
    assert len(cluster.requests) <= 10
    assert ops(cluster)[:2] == ["target", "create"]


def test_through_the_container_with_overrides(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes(b"via container\n", exit_code=4))
    container = Container()
    out, err = io.BytesIO(), io.StringIO()
    with container.override_providers(
        cluster=providers.Object(cluster),
        clock=providers.Object(cluster.clock),
        stdout=providers.Object(out),
        stderr=providers.Object(err),
        environ=providers.Object({}),
    ):
        code = lifecycle.run(
            resolved_run("p"),
            container.seams(),
            container.cluster_ports(),
            dry_run_server=False,
        )
    assert code == 4
    assert out.getvalue() == b"via container\n"
    assert "using context 'fake', namespace 'default'" in err.getvalue()


def test_oom_is_137_with_a_note_even_when_quiet(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).oom_killed(at=2))
    result = run_on_fake(resolved_run("p", quiet=True), cluster)
    assert result.code == 137
    assert "OOMKilled" in result.stderr
    assert "using context" not in result.stderr


def test_bad_image_fails_fast_and_cleans_up(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().waiting("ErrImagePull", "pull access denied", at=0.5))
    result = run_on_fake(resolved_run("p", timeout=300), cluster)
    assert isinstance(result.error, RunnerError)
    assert "ErrImagePull" in str(result.error) and "pull access denied" in str(result.error)
    assert "timed out" not in str(result.error)  # failed fast, not at the 300 s timeout
    assert "p" not in cluster


def test_init_container_bad_image_fails_fast(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().init_waiting("ImagePullBackOff", "back-off", at=0.5))
    run = resolved_run("p")
    run.manifest["spec"]["initContainers"] = [{"name": "setup", "image": "nope"}]
    result = run_on_fake(run, cluster)
    assert isinstance(result.error, RunnerError)
    assert "init container 'setup'" in str(result.error)


def test_startup_timeout_names_the_blocking_event(cluster: FakeCluster) -> None:
    cluster.script_pod(
        "p", PodScript().unschedulable("0/3 nodes are available: Insufficient memory.")
    )
    result = run_on_fake(resolved_run("p", timeout=30), cluster)
    assert isinstance(result.error, RunnerError)
    assert "timed out after 30s" in str(result.error)
    assert "Insufficient memory" in str(result.error)
    assert result.stderr.count("FailedScheduling") == 1  # surfaced once
    assert "p" not in cluster


def test_job_mode_follows_its_pod_and_deletes_the_job(cluster: FakeCluster) -> None:
    cluster.script_pod("j", PodScript.completes(b"from the job\n", exit_code=4))
    result = run_on_fake(resolved_run("j", kind=ResourceKind.JOB), cluster)
    assert result.code == 4
    assert result.stdout == b"from the job\n"
    assert ("Job", "default", "j", "Background") in cluster.deletions
    assert cluster.jobs == [] and cluster.pods == []


def test_job_discovery_and_startup_share_one_timeout(cluster: FakeCluster) -> None:
    cluster.script_pod("j", PodScript.pending())
    result = run_on_fake(resolved_run("j", kind=ResourceKind.JOB, timeout=20), cluster)
    assert isinstance(result.error, RunnerError) and "timed out after 20s" in str(result.error)
    watches = [r.params["timeout"] for r in cluster.requests if r.operation == "watch"]
    assert sum(watches) <= 20  # one budget for discovery and startup, not 2 x --timeout


def test_keep_prints_exact_commands_and_deletes_nothing(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes(exit_code=0))
    result = run_on_fake(resolved_run("p", keep=True, namespace="team"), cluster)
    assert result.code == 0
    assert cluster.deletions == []
    assert "kubectl describe pod p -n team" in result.stderr
    assert "kubectl logs p -n team -c main" in result.stderr


def test_create_conflict_never_deletes_the_existing_pod(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1))
    cluster.create(resolved_run("p", run_id="someone-else").manifest, namespace="default")
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, RunnerError)
    assert "omit --name" in str(result.error)
    assert cluster.deletions == []
    assert "p" in cluster


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (Forbidden("pods is forbidden", status=403), "kubectl auth can-i create pods -n default"),
        (Forbidden('exceeded quota: "q", requested: cpu', status=403), "ResourceQuota"),
        (Unreachable("connection refused", status=None), "could not be reached"),
    ],
)
def test_create_errors_get_hints(cluster: FakeCluster, error: Exception, hint: str) -> None:
    cluster.fail_next("create", error)
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, RunnerError)
    assert hint in str(result.error)
    assert "\n" not in str(result.error)
    assert "delete" not in ops(cluster)


@pytest.mark.parametrize(
    "error",
    [
        Unreachable("cannot reach the Kubernetes API at https://h: Connection refused"),
        Unauthorized("Unauthorized", status=401),
    ],
)
def test_an_unreachable_or_unauthorised_cluster_is_one_line_without_a_sweep(
    cluster: FakeCluster, error: Exception
) -> None:
    cluster.fail_next("create", error)
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, RunnerError)
    assert "orphan sweep" not in result.stderr  # it would only fail the same way, first
    assert ops(cluster) == ["target", "create"]


def test_failed_delete_keeps_the_exit_code_and_still_sweeps(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes(exit_code=3))
    cluster.fail_next("delete", Forbidden("cannot delete pods", status=403))
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == 3
    assert "could not delete pod p" in result.stderr
    assert "kubectl delete pod p -n default" in result.stderr
    assert ops(cluster)[-2:] == ["list_page", "list_page"]


def test_log_drops_and_clean_ends_mid_run_lose_nothing(cluster: FakeCluster) -> None:
    script = (
        PodScript()
        .running(at=1)
        .log(b"one\n", at=1.1)
        .drop_log_stream(at=1.2)
        .log(b"two\n", at=1.3)
        .end_log_stream(at=1.4)
        .log(b"three", at=1.5)
        .log(b"\n", at=1.6)
        .exit(0, at=2)
    )
    cluster.script_pod("p", script)
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == 0
    assert result.stdout == b"one\ntwo\nthree\n"
    # + after the clean end near the exit: the tail check (it shows `three` came after: no
    # proof of the end) and the reads from sinceTime that fetch it and confirm the end
    assert 3 <= ops(cluster).count("stream_logs") <= 5


def test_pod_deleted_underneath_is_125_promptly(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).delete(at=5))
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, RunnerError)
    assert "deleted before its container terminated" in str(result.error)


def test_eviction_is_125(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).evict(at=2))
    result = run_on_fake(resolved_run("p"), cluster)
    assert isinstance(result.error, RunnerError)
    assert "Evicted" in str(result.error)


def orphan(cluster: FakeCluster, name: str, *, user: str = USER, keep: bool = False) -> None:
    manifest: dict[str, Any] = resolved_run(name, run_id=f"old-{name}").manifest
    manifest["metadata"]["labels"] = own_labels(f"old-{name}", keep=keep, user=user)
    cluster.script_pod(name, PodScript.completes())
    cluster.create(manifest, namespace="default")


def test_sweep_removes_my_old_orphans_only(cluster: FakeCluster) -> None:
    orphan(cluster, "old-mine")
    orphan(cluster, "old-kept", keep=True)
    orphan(cluster, "old-theirs", user="bob")
    cluster.advance(3600)
    cluster.script_pod("p", PodScript.completes())
    result = run_on_fake(resolved_run("p", min_age=300), cluster)
    assert result.code == 0
    remaining = {p["metadata"]["name"] for p in cluster.pods}
    assert remaining == {"old-kept", "old-theirs"}
    list_calls = [r for r in cluster.requests if r.operation == "list_page"]
    assert list_calls
    assert all("squarepeg.io/created-by=jane" in r.params["label_selector"] for r in list_calls)


def test_sweep_failure_only_warns(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes(exit_code=5))
    cluster.fail_next("list_page", Forbidden("cannot list pods", status=403))
    result = run_on_fake(resolved_run("p"), cluster)
    assert result.code == 5
    assert "orphan sweep skipped" in result.stderr


def test_sweep_can_be_turned_off(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes())
    run_on_fake(resolved_run("p", sweep=False), cluster)
    assert "list_page" not in ops(cluster) and "read" not in ops(cluster)


def test_quiet_success_prints_nothing(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript.completes(b"out\n"))
    result = run_on_fake(resolved_run("p", quiet=True), cluster)
    assert (result.code, result.stdout, result.stderr) == (0, b"out\n", "")


def test_quiet_failure_still_raises_the_error(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().waiting("InvalidImageName", at=0.5))
    result = run_on_fake(resolved_run("p", quiet=True), cluster)
    assert isinstance(result.error, RunnerError)
    assert result.stderr == ""


def test_interrupt_error_type_is_interrupted() -> None:
    assert issubclass(Interrupted, Exception)

"""squarepeg's use cases from a user's suite: run, dry run, clean and rm on FakeCluster, and a
real run on the Kubernetes API sandbox, through pegboard.testing only."""

from __future__ import annotations

import shutil

import pytest

from pegboard.adapters.fakes import FakeCluster, PodScript
from pegboard.testing import Squarepeg


def test_run_on_the_fake_streams_the_output_and_exits_with_the_containers_code(
    squarepeg_on_fakes: Squarepeg, fake_cluster: FakeCluster
) -> None:
    fake_cluster.script_pod(
        lambda pod: True,
        PodScript().running(at=1).log(b"line 1\n", at=1.5).log(b"no newline", at=2).exit(7, at=3),
    )
    result = squarepeg_on_fakes.run(
        "alpine", "sh", "-c", "exit 7", flags=["--cpus", "0.5"], result_file=True
    )
    assert result.exit_code == 7
    assert result.stdout_bytes == b"line 1\nno newline"
    assert result.result is not None
    assert (result.result["exit_code"], result.result["output_complete"]) == (7, True)
    assert result.result["pod"] == result.result["name"]
    assert fake_cluster.pods == []  # deleted after the run
    created = [r for r in fake_cluster.requests if r.operation == "create"]
    assert [r.kind for r in created if r.kind != "Lease"] == ["Pod"]


def test_a_pod_that_cannot_start_is_a_runner_failure(
    squarepeg_on_fakes: Squarepeg, fake_cluster: FakeCluster
) -> None:
    fake_cluster.script_pod(
        lambda pod: True, PodScript().waiting("ErrImagePull", "no such image", at=1)
    )
    result = squarepeg_on_fakes.run("nosuch/image", "true", flags=["--timeout", "30"])
    assert result.exit_code != 0
    assert "ErrImagePull" in result.stderr
    assert "Traceback" not in result.stderr


def test_dry_run_returns_the_manifest_and_creates_nothing(
    squarepeg_on_fakes: Squarepeg, fake_cluster: FakeCluster
) -> None:
    result = squarepeg_on_fakes.dry_run(
        "python:3.12", "python", "-c", "print(1)", flags=["--mode", "job", "-e", "FOO=bar"]
    )
    assert result.exit_code == 0 and result.manifest is not None
    assert result.manifest["kind"] == "Job"
    container = result.manifest["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "FOO", "value": "bar"} in container["env"]
    assert fake_cluster.requests == [] or all(
        r.operation != "create" for r in fake_cluster.requests
    )


def test_a_bad_flag_is_a_usage_error(squarepeg_on_fakes: Squarepeg) -> None:
    result = squarepeg_on_fakes.dry_run("alpine", "true", flags=["--memory", "12q"])
    assert result.exit_code == 2 and result.manifest is None
    assert "--memory" in result.stderr


def test_kept_pod_then_clean_and_rm(
    squarepeg_on_fakes: Squarepeg, fake_cluster: FakeCluster
) -> None:
    fake_cluster.script_pod(lambda pod: True, PodScript.completes())
    kept = squarepeg_on_fakes.run("alpine", "true", flags=["--keep", "--name", "kept-one"])
    assert kept.exit_code == 0
    assert "kept-one" in fake_cluster
    fake_cluster.advance(3600)  # clean leaves young pods alone (a runner may still be starting)
    listed = squarepeg_on_fakes.clean("--dry-run", "--include-kept")
    assert listed.exit_code == 0 and "kept-one" in listed.stdout
    assert "kept-one" in fake_cluster  # a dry run deletes nothing
    removed = squarepeg_on_fakes.rm("kept-one")
    assert removed.exit_code == 0, removed.stderr
    assert "kept-one" not in fake_cluster


def test_run_on_the_kubernetes_sandbox_runs_the_command_for_real(
    squarepeg_on_sandbox: Squarepeg,
) -> None:
    if shutil.which("sh") is None:
        pytest.skip("the sandbox's kubelet runs the container's command with the local sh")
    result = squarepeg_on_sandbox.run("alpine", "sh", "-c", "echo hi; echo oops >&2; exit 3")
    assert result.exit_code == 3
    assert result.stdout == "hi\noops\n"  # a container's stderr reaches stdout, as in kubectl logs
    listed = squarepeg_on_sandbox.clean("--dry-run")
    assert listed.exit_code == 0 and "squarepeg-alpine" not in listed.stdout

"""runpod-deploy's use cases from a user's suite: validate, plan, run and cleanup on the local
provider and on the fakes, and validate/dry run on the RunPod API sandbox, through
pegboard.testing only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pegboard.adapters.fakes import FakeClock, FakeGpuCloud, FakeHost, FakeJob
from pegboard.testing import RunpodDeploy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of examples/local, so the run's records land in the test's directory."""
    shutil.copytree(EXAMPLES / "local", tmp_path / "local")
    return tmp_path / "local"


def test_validate_plan_and_run_on_the_local_provider(project: Path, tmp_path: Path) -> None:
    deploy = RunpodDeploy(home=tmp_path / "home")
    config = project / "hello.yaml"
    assert deploy.validate(config).exit_code == 0
    planned = deploy.plan(config)
    assert planned.exit_code == 0
    assert "[dry-run] would launch /workspace/run.sh" in planned.stderr
    result = deploy.run(config, "--var", "greeting=hi")
    assert result.exit_code == 0, result.stderr
    assert "HELLO_DONE" in result.stdout
    assert result.manifest is not None and result.manifest["outcome"] == "succeeded"
    assert result.run_dir is not None and result.run_dir.parent == project / "artifacts/runpod"
    assert (result.run_dir / "results").is_dir()


def test_a_bad_config_is_a_config_error_naming_the_key(project: Path, tmp_path: Path) -> None:
    config = project / "hello.yaml"
    config.write_text(config.read_text().replace("volume_gb: 1", "volume_gb: -1"))
    result = RunpodDeploy(home=tmp_path / "home").validate(config)
    assert result.exit_code == 2
    assert "storage.volume_gb" in result.stderr and "Traceback" not in result.stderr


@pytest.fixture
def fakes() -> tuple[FakeClock, FakeHost, FakeGpuCloud]:
    clock = FakeClock()
    host = FakeHost(clock=clock)
    return clock, host, FakeGpuCloud(clock, host=host)


def test_run_on_the_fakes_takes_virtual_time_and_releases_the_pod(
    project: Path, tmp_path: Path, fakes: tuple[FakeClock, FakeHost, FakeGpuCloud]
) -> None:
    clock, host, cloud = fakes
    host.script_job(FakeJob(output=[(0.0, b"step\n"), (300.0, b"HELLO_DONE\n")], exit_code=0))
    host.put("/workspace/out/result.json", b"{}")
    deploy = RunpodDeploy(home=tmp_path / "home", cloud=cloud, host=host)
    result = deploy.run(project / "hello.yaml")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "step\nHELLO_DONE\n"
    assert clock.monotonic() >= 300  # five virtual minutes, no real waiting
    assert [pod.history for pod in cloud.pods.values()] == [["create", "terminate"]]
    assert result.manifest is not None and result.manifest["pod_id"] == "fakepod-0001"


def test_a_failed_run_on_the_fakes_leaves_a_pod_cleanup_releases(
    project: Path, tmp_path: Path, fakes: tuple[FakeClock, FakeHost, FakeGpuCloud]
) -> None:
    _, host, cloud = fakes
    host.script_job(FakeJob(output=[(0.0, b"boom\n")], exit_code=1))
    deploy = RunpodDeploy(home=tmp_path / "home", cloud=cloud, host=host)
    result = deploy.run(project / "hello.yaml")
    assert result.exit_code == 1
    assert result.manifest is not None and result.manifest["failed"] is True
    assert [pod.status for pod in cloud.live_pods()] == ["EXITED"]  # on_failure: stop
    released = deploy.cleanup("--pod-id", "fakepod-0001", "--mode", "delete", "--yes")
    assert released.exit_code == 0, released.stderr
    assert cloud.live_pods() == []


def test_validate_and_dry_run_against_the_runpod_sandbox(
    runpod_deploy_on_sandbox: RunpodDeploy, tmp_path: Path
) -> None:
    shutil.copytree(EXAMPLES / "runpod", tmp_path / "runpod")
    config = tmp_path / "runpod" / "hello.yaml"
    checked = runpod_deploy_on_sandbox.validate(config, "--check-availability")
    assert checked.exit_code == 0, checked.stderr
    planned = runpod_deploy_on_sandbox.dry_run(config)
    assert planned.exit_code == 0, planned.stderr
    assert "[dry-run] would create pod" in planned.stderr

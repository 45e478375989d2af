"""`runpod-deploy` through the CLI against the RunPod API sandbox with access no retry can fix
(issue 17 items 2 and 10): a missing SSH key or API key is a usage error (exit 2) before any
pod or record exists; a key the pod refuses ends the ready wait in seconds, the pod goes per
on_failure and the run records it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.runpod_cloud_deploy import CloudDeploy, manifest_of
from pegboard.adapters.sandboxes.sshd import generate_key


@pytest.fixture
def deploy(tmp_path: Path) -> Iterator[CloudDeploy]:
    deploy = CloudDeploy(tmp_path)
    try:
        yield deploy
    finally:
        deploy.close()


def _nothing_recorded(deploy: CloudDeploy) -> None:
    assert deploy.sandbox.pods() == []
    assert not (deploy.home / ".local" / "state").exists()  # no pointer
    assert not list(deploy.project.rglob("runpod_deploy_pull_manifest.json"))  # no record


def test_a_missing_ssh_key_creates_no_pod_and_validate_says_so(deploy: CloudDeploy) -> None:
    deploy.key.unlink()
    Path(str(deploy.key) + ".pub").unlink()
    config = deploy.config("hello")
    checked = deploy.cli("validate", "--config", str(config))
    assert checked.returncode == 2, checked.stderr.decode()
    assert b"ssh.key_path" in checked.stderr and b"ssh key not found" in checked.stderr
    done = deploy.run(config)
    err = done.stderr.decode()
    assert done.returncode == 2, err[-3000:]
    assert "ssh.key_path: ssh key not found" in err and "Traceback" not in err
    assert done.stdout == b""  # not even RUN_DIR=
    _nothing_recorded(deploy)


def test_no_api_key_is_a_usage_error_before_anything_is_recorded(deploy: CloudDeploy) -> None:
    done = deploy.cli("run", "--config", str(deploy.config("hello")), env={"RUNPOD_API_KEY": ""})
    err = done.stderr.decode()
    assert done.returncode == 2, err[-3000:]
    assert "RUNPOD_API_KEY" in err and len(err.strip().splitlines()) <= 2
    _nothing_recorded(deploy)


def test_a_refused_key_ends_the_wait_at_once_and_the_pod_is_stopped(deploy: CloudDeploy) -> None:
    # The pod is created trusting another key (the .pub beside ours is not its pair).
    other = deploy.home / "other" / "id_ed25519"
    Path(str(deploy.key) + ".pub").write_text(generate_key(other, comment="not-ours") + "\n")
    config = deploy.config("hello", lifecycle={"on_success": "delete", "on_failure": "stop"})
    done = deploy.run(config)  # ssh_ready_timeout_sec: the default 900 s
    err = done.stderr.decode()
    assert done.returncode == 1, err[-3000:]
    manifest = manifest_of(done)
    assert manifest["failure_phase"] == "ready", manifest["failure_reason"]
    assert "authentication refused" in manifest["failure_reason"]
    assert "no retry can fix this" in manifest["failure_reason"]
    assert manifest["lifecycle_action"] == "stop" and manifest["pod_final_state"] == "EXITED"
    pod_id = manifest["pod_id"]
    assert deploy.live_pods() == {pod_id: "EXITED"}
    assert pod_id in (manifest["left_behind"] or "")
    listed = deploy.stale_pods()
    assert deploy.shell_command(listed[pod_id]["release"]).returncode == 0
    assert deploy.live_pods() == {}

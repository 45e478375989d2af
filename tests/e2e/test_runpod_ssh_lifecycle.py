"""`runpod-deploy run` with `pod.provider: ssh` end to end (issue 9): the installed CLI as a
subprocess, a real sshd on 127.0.0.1 (keys generated at test time), real paramiko and rsync.

Every phase of a run (setup, secrets, staging, preflight, launch, monitor, required and
optional artifacts), each lifecycle action as docs/runpod-deploy/ssh.md documents it for a
machine that is not rented, and the commands after a run (`logs`, `ls-stale`, `cleanup`),
which reach the host through what the run's pointer recorded (no config for cleanup).
Faults are tests/e2e/test_runpod_ssh_faults.py; the secret scan test_runpod_ssh_secret_scan.py.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.ssh_deploy import RunningDeploy, SshDeploy, one_failure_line, release_command
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sandboxes.sshd import LoopbackSshd


@pytest.fixture
def sshd(start_sshd: StartSshd) -> LoopbackSshd:
    return start_sshd()


@pytest.fixture
def deploy(tmp_path: Path, sshd: LoopbackSshd, ssh_client_key: SshClientKey) -> Iterator[SshDeploy]:
    deploy = SshDeploy(tmp_path, sshd, ssh_client_key)
    yield deploy
    deploy.close()


def _finished(run: RunningDeploy) -> dict[str, Any]:
    code = run.finish()
    assert code == 0, run.stderr.decode()
    return run.manifest()


def _pointer(manifest: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(manifest["state_file"]).read_text())
    return data


def _run_pointers(deploy: SshDeploy) -> list[Path]:
    return sorted((deploy.home / ".local" / "state" / "runpod-deploy" / "runs").glob("*"))


FULL_BODY = (
    "set -eu\n"
    'test -f "{volume_mount}/payload/data.txt"\n'
    'mkdir -p "{volume_mount}/out"\n'
    'cp "{volume_mount}/payload/data.txt" "{volume_mount}/out/result.txt"\n'
    'echo "setup left: $(cat "{volume_mount}/setup.txt")"\n'
    'echo "secret mode: $(stat -c %a "{volume_mount}/secrets/key.pem")"\n'
    "echo JOB_DONE\n"
)


def test_a_run_goes_through_every_phase_and_delete_removes_the_workspace(
    deploy: SshDeploy, tmp_path: Path
) -> None:
    (deploy.project / "payload").mkdir()
    (deploy.project / "payload" / "data.txt").write_text("staged bytes\n")
    key = tmp_path / "key.pem"
    key.write_text("not-a-real-key-material\n")
    config = deploy.config(
        FULL_BODY,
        setup_after_secrets=True,
        secrets=[
            {"name": "key", "file": str(key), "destination": "{volume_mount}/secrets/key.pem"},
        ],
        setup=[{"command": 'echo from-setup > "{volume_mount}/setup.txt"'}],
        staging=[
            {"label": "payload", "source": "payload/", "destination": "{volume_mount}/payload"}
        ],
        preflight=[{"command": 'test -s "{volume_mount}/payload/data.txt"'}],
        artifacts=[
            {
                "label": "results",
                "remote_path": "{volume_mount}/out/",
                "local_path": "{run_dir}/results",
            },
            {
                "label": "optional",
                "remote_path": "{volume_mount}/never-written/",
                "local_path": "{run_dir}/optional",
                "required": False,
            },
        ],
    )
    run = deploy.start(config)
    manifest = _finished(run)

    assert run.job_output == b"setup left: from-setup\nsecret mode: 600\nJOB_DONE\n"
    assert (run.run_dir / "job.log").read_bytes() == run.job_output
    assert (run.run_dir / "results" / "result.txt").read_text() == "staged bytes\n"
    by_label = {row["label"]: row for row in manifest["artifacts"]}
    assert by_label["results"]["status"] == "success"
    assert by_label["optional"]["status"] == "failed" and not by_label["optional"]["required"]
    assert manifest["provider"] == "ssh" and manifest["outcome"] == "succeeded"
    assert manifest["lifecycle_action"] == "delete"
    assert manifest["pod_final_state"] == "TERMINATED"
    assert not (deploy.workspaces / manifest["pod_id"]).exists()
    # Nothing is left to point at: the pointers and the run's pinned host key are gone.
    assert not Path(manifest["state_file"]).exists()
    assert _run_pointers(deploy) == []
    # The user's own known_hosts is never written.
    assert not (deploy.home / ".ssh" / "known_hosts").exists()


def test_a_missing_required_artifact_fails_the_run_and_stop_keeps_the_workspace(
    deploy: SshDeploy,
) -> None:
    config = deploy.config(
        "echo JOB_DONE\n",
        artifacts=[
            {
                "label": "model",
                "remote_path": "{volume_mount}/model/",
                "local_path": "{run_dir}/model",
            }
        ],
    )
    run = deploy.start(config)
    assert run.finish() == 1
    manifest = run.manifest()
    assert manifest["failure_phase"] == "pull" and "model" in manifest["failure_reason"]
    assert manifest["lifecycle_action"] == "stop" and manifest["pod_final_state"] == "EXITED"
    pod_dir = deploy.workspaces / manifest["pod_id"]
    assert (pod_dir / "workspace" / "job.log").read_bytes() == b"JOB_DONE\n"
    assert json.loads((pod_dir / "pod.json").read_text())["desired_status"] == "EXITED"
    line = one_failure_line(run.stderr)
    assert "pull" in line and "model" in line


def test_stop_then_logs_says_where_the_log_is_and_cleanup_deletes_through_the_pointer(
    deploy: SshDeploy,
) -> None:
    config = deploy.config("echo line-1\necho JOB_DONE\n", lifecycle={"on_success": "stop"})
    manifest = _finished(deploy.start(config))
    pod_dir = deploy.workspaces / manifest["pod_id"]
    assert manifest["pod_final_state"] == "EXITED" and pod_dir.is_dir()
    pointer = _pointer(manifest)
    assert pointer["provider"] == "ssh" and pointer["pod_id"] == manifest["pod_id"]
    locator = pointer["locator"]
    assert (locator["host"], locator["port"]) == (deploy.sshd.host, deploy.sshd.port)
    assert locator["key_path"] == str(deploy.key.private_path)
    pinned = Path(locator["known_hosts"])
    assert stat.S_IMODE(pinned.stat().st_mode) == 0o600
    assert f"[{deploy.sshd.host}]:{deploy.sshd.port} ssh-ed25519 " in pinned.read_text()

    assert "runpod-deploy ls-stale --provider ssh" in manifest["left_behind"]
    assert "billing" not in manifest["left_behind"]  # a machine that is not rented
    logs = deploy.cli("logs", "--config", str(config), "--no-follow")
    assert logs.returncode == 1
    line = one_failure_line(logs.stderr)
    assert "EXITED" in line and manifest["run_dir"] in line, line

    # No config: the pointer alone reaches the host (host, port, user, key, pinned key).
    done = deploy.cli(*release_command(manifest))
    assert done.returncode == 0, done.stderr.decode()
    assert not pod_dir.exists()
    assert not Path(manifest["state_file"]).exists() and not pinned.exists()


def test_preserve_leaves_the_job_as_it_is_logs_ls_stale_and_cleanup_reach_it(
    deploy: SshDeploy,
) -> None:
    config = deploy.config(
        "echo preserved-log\necho JOB_DONE\n", lifecycle={"on_success": "preserve"}
    )
    manifest = _finished(deploy.start(config))
    pod_id = manifest["pod_id"]
    assert manifest["lifecycle_action"] == "preserve"
    assert manifest["pod_final_state"] == "RUNNING"

    logs = deploy.cli("logs", "--config", str(config), "--no-follow")
    assert logs.returncode == 0, logs.stderr.decode()
    assert logs.stdout == b"preserved-log\nJOB_DONE\n"

    listed = deploy.cli("ls-stale", "--provider", "ssh", "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    assert pod_id in listed.stdout.decode()
    table = deploy.cli("ls-stale", "--provider", "ssh")
    assert f"release {pod_id}: runpod-deploy cleanup --state-file" in table.stdout.decode()

    done = deploy.cli(*release_command(manifest))
    assert done.returncode == 0, done.stderr.decode()
    assert not (deploy.workspaces / pod_id).exists()
    after = deploy.cli("ls-stale", "--provider", "ssh", "--json")
    assert after.returncode == 0 and pod_id not in after.stdout.decode()


def test_recycle_keeps_the_workspace_for_the_next_run_of_the_config(deploy: SshDeploy) -> None:
    body = (
        'if [ -f "{volume_mount}/warm.txt" ]; then echo "warm: $(cat "{volume_mount}/warm.txt")"; '
        'else echo cold; echo first-run > "{volume_mount}/warm.txt"; fi\n'
        "echo JOB_DONE\n"
    )
    config = deploy.config(body, lifecycle={"on_success": "recycle", "on_failure": "stop"})
    first_run = deploy.start(config)
    first = _finished(first_run)
    assert first_run.job_output == b"cold\nJOB_DONE\n"
    assert first["lifecycle_action"] == "recycle" and first["pod_final_state"] == "EXITED"

    second_run = deploy.start(config)
    second = _finished(second_run)
    assert second["pod_id"] == first["pod_id"] and second["pod_resumed"] is True
    assert second_run.job_output == b"warm: first-run\nJOB_DONE\n"
    assert len(list(deploy.workspaces.iterdir())) == 1

    done = deploy.cli(*release_command(second))
    assert done.returncode == 0, done.stderr.decode()
    assert not deploy.workspaces.joinpath(second["pod_id"]).exists()


def test_validate_and_dry_run_need_no_connection(deploy: SshDeploy, sshd: LoopbackSshd) -> None:
    config = deploy.config("echo JOB_DONE\n", pod={"provider": "ssh"})  # no image, no GPUs
    checked = deploy.cli("validate", "--config", str(config), "--check-availability")
    assert checked.returncode == 0, checked.stderr.decode()
    dry = deploy.cli("run", "--config", str(config), "--dry-run")
    assert dry.returncode == 0, dry.stderr.decode()
    assert sshd.accepted_logins() == 0
    assert not deploy.workspaces.exists()


def test_without_any_ssh_run_ls_stale_lists_nothing_and_cleanup_by_id_is_a_usage_error(
    deploy: SshDeploy,
) -> None:
    listed = deploy.cli("ls-stale", "--provider", "ssh")
    assert listed.returncode == 0, listed.stderr.decode()
    assert "no ssh place recorded by your runs" in listed.stderr.decode()
    cleanup = deploy.cli("cleanup", "--pod-id", "ssh-0123456789ab", "--provider", "ssh")
    assert cleanup.returncode == 2
    line = one_failure_line(cleanup.stderr)
    assert "--provider ssh" in line and "ssh.host" in line, line


def test_a_fresh_pod_needs_no_ready_probe_its_claim_proved_the_shell(
    tmp_path: Path, start_sshd: StartSshd, ssh_client_key: SshClientKey
) -> None:
    """The claim is a command over the run's one connection: a separate `true` would only cost
    a round trip (issue 9, the ssh overhead)."""
    server = start_sshd(record_commands=True)
    deploy = SshDeploy(tmp_path, server, ssh_client_key)
    try:
        manifest = _finished(deploy.start(deploy.config("echo JOB_DONE\n")))
    finally:
        deploy.close()
    assert manifest["outcome"] == "succeeded"
    commands = server.recorded_commands()
    assert any("mkdir" in c and "pod.json" in c for c in commands)  # the claim ran
    assert not [c for c in commands if c.endswith("-c true; exit $?")], commands


def test_a_run_is_one_tcp_connection_and_a_refused_config_logs_in_nowhere(
    tmp_path: Path, start_sshd: StartSshd, ssh_client_key: SshClientKey
) -> None:
    """The console script begins the key exchange while the run loads (early_contact.py): the
    run's dial takes it, so sshd sees one TCP connection a run; a run that stops at its config
    (a key file that does not exist: exit 2) authenticated nowhere and pinned nothing."""
    server = start_sshd()
    deploy = SshDeploy(tmp_path, server, ssh_client_key)
    try:
        before = server.log_text().count("Connection from ")
        manifest = _finished(deploy.start(deploy.config("echo JOB_DONE\n")))
        assert manifest["outcome"] == "succeeded"
        assert server.log_text().count("Connection from ") == before + 1
        assert server.accepted_logins() == 1
        missing = deploy.config("echo JOB_DONE\n", ssh={"key_path": str(tmp_path / "nokey")})
        refused = deploy.start(missing)
        assert refused.finish() == 2
        assert "ssh key not found" in one_failure_line(refused.stderr)
    finally:
        deploy.close()
    assert server.accepted_logins() == 1
    assert _run_pointers(deploy) == []

"""Faults through the CLI on the `ssh` provider (issue 9), against a real sshd on 127.0.0.1.

`runpod-deploy run` runs as a subprocess; each fault is injected once the job's own output has
reached our stdout (so the run is in its monitor phase), never after a sleep. What is asserted
is the outcome and its reason; how fast a fault is noticed is measured in bench/runpod_ssh.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.ssh_deploy import SshDeploy, one_failure_line, release_command
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, free_port

# The job writes its pid where the test can find it (the "host" is this machine), says it has
# started, then becomes a long sleep with that same pid: killing it kills the whole script.
LONG_JOB = 'echo $$ > "{volume_mount}/job.pid"\necho started\nexec sleep 300\n'


@pytest.fixture
def sshd(start_sshd: StartSshd) -> LoopbackSshd:
    return start_sshd()


@pytest.fixture
def deploy(tmp_path: Path, sshd: LoopbackSshd, ssh_client_key: SshClientKey) -> Iterator[SshDeploy]:
    deploy = SshDeploy(tmp_path, sshd, ssh_client_key)
    yield deploy
    deploy.close()
    for pid_file in deploy.workspace_files("job.pid"):
        _kill_quietly(int(pid_file.read_text()))


def test_sshd_session_killed_mid_monitor_the_run_finishes_with_a_byte_identical_log(
    deploy: SshDeploy, sshd: LoopbackSshd, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    body = (
        'for i in $(seq 1 300); do echo "before $i"; done\n'
        "echo started\n"
        f"while [ ! -e {gate} ]; do sleep 0.02; done\n"
        'for i in $(seq 1 300); do echo "after $i"; done\n'
        "echo JOB_DONE\n"
    )
    run = deploy.start(deploy.config(body))
    run.wait_for_stdout(b"started\n")
    logins = sshd.accepted_logins()
    assert sshd.kill_sessions() >= 1  # the run's one connection, mid-follow
    gate.touch()
    assert run.finish() == 0, run.stderr.decode()

    before = b"".join(b"before %d\n" % i for i in range(1, 301))
    after = b"".join(b"after %d\n" % i for i in range(1, 301))
    expected = before + b"started\n" + after + b"JOB_DONE\n"
    assert run.job_output == expected  # streamed: nothing lost, nothing twice
    assert (run.run_dir / "job.log").read_bytes() == expected  # the pulled log
    assert sshd.accepted_logins() > logins  # it did reconnect
    manifest = run.manifest()
    assert manifest["outcome"] == "succeeded" and manifest["failed"] is False


def test_a_changed_host_key_is_refused_with_one_line_naming_the_pod_and_both_keys(
    deploy: SshDeploy, sshd: LoopbackSshd
) -> None:
    run = deploy.start(deploy.config("echo JOB_DONE\n", lifecycle={"on_success": "preserve"}))
    assert run.finish() == 0, run.stderr.decode()
    manifest = run.manifest()
    pod = manifest["pod_id"]
    pinned = _fingerprint(sshd.host_key_path)

    # The machine comes back with another host key on the same address.
    sshd.stop()
    for old in (sshd.host_key_path, sshd.host_key_path.with_name("host_ed25519.pub")):
        old.unlink()
    sshd.start()
    offered = _fingerprint(sshd.host_key_path)
    assert offered != pinned
    logins = sshd.accepted_logins()

    done = deploy.cli(*release_command(manifest))
    assert done.returncode == 1, done.stderr.decode()
    line = one_failure_line(done.stderr)
    assert pod in line and pinned in line and offered in line, line
    assert "changed" in line, line
    assert sshd.accepted_logins() == logins  # refused before authenticating
    assert deploy.workspaces.joinpath(pod).is_dir()  # nothing was deleted


def test_the_remote_script_killed_without_a_marker_fails_the_run_with_its_status(
    deploy: SshDeploy,
) -> None:
    run = deploy.start(deploy.config(LONG_JOB))
    run.wait_for_stdout(b"started\n")
    (pid_file,) = deploy.workspace_files("job.pid")
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert run.finish() == 1
    manifest = run.manifest()
    assert manifest["failed"] is True and manifest["outcome"] == "failed"
    assert manifest["failure_phase"] == "monitor"
    assert manifest["remote_exit_code"] == 128 + signal.SIGKILL
    assert "without the success marker" in manifest["failure_reason"]
    line = one_failure_line(run.stderr)
    assert "monitor" in line and str(128 + signal.SIGKILL) in line, line
    assert manifest["lifecycle_action"] == "stop"  # on_failure


def test_an_unreachable_host_fails_within_the_ready_timeout_with_one_line(
    deploy: SshDeploy,
) -> None:
    port = free_port()  # nothing listens there
    config = deploy.config(
        "echo JOB_DONE\n",
        ssh={"port": port},
        budget={
            "cost_cap_usd": 1.0,
            "assumed_hourly_rate_usd": 0.5,
            "max_runtime_minutes": 10,
            "ssh_ready_timeout_sec": 2,
        },
    )
    run = deploy.start(config)
    assert run.finish() == 1
    line = one_failure_line(run.stderr)
    assert f"127.0.0.1:{port}" in line, line
    assert run.job_output == b""
    manifest = run.manifest()
    assert manifest["failed"] is True and manifest["pod_id"] in (None, "")
    assert not deploy.workspaces.exists() or not any(deploy.workspaces.iterdir())


def test_ctrl_c_during_monitor_runs_on_failure_and_records_a_failed_run(
    deploy: SshDeploy,
) -> None:
    run = deploy.start(deploy.config(LONG_JOB))
    run.wait_for_stdout(b"started\n")
    run.proc.send_signal(signal.SIGINT)
    assert run.finish() == 130
    manifest = run.manifest()
    assert manifest["failed"] is True and manifest["outcome"] == "interrupted"
    assert manifest["failure_phase"] == "monitor"
    assert manifest["lifecycle_action"] == "stop" and manifest["pod_final_state"] == "EXITED"
    pod_dir = deploy.workspaces / manifest["pod_id"]
    assert pod_dir.is_dir()  # stop keeps the workspace
    (pid_file,) = deploy.workspace_files("job.pid")
    assert not _alive(int(pid_file.read_text()))  # ... and kills the job


def _fingerprint(private_key: Path) -> str:
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(private_key.with_name(private_key.name + ".pub"))],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split()[1]  # "SHA256:..."


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 10  # the stop's SIGTERM -> SIGKILL grace, then reaping
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state in {"Z", "X"}:
            return False
        time.sleep(0.05)
    return True


def _kill_quietly(pid: int) -> None:
    """Kill a job a failed test left running, if that pid is still our `sleep 300`."""
    try:
        if Path(f"/proc/{pid}/cmdline").read_bytes() != b"sleep\x00300\x00":
            return
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return

"""Faults on purpose against a real sshd: sshd killed mid-follow, a changed host key, a job
killed without its marker."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.components import require_executable
from helpers.ssh_adapters import connect_shell, target_for
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.rsync_file_sync import RsyncFileSync
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key
from pegboard.adapters.ssh_host_keys import fingerprint
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.ports.remote_shell import DetachedStatus, HostKeyRejected

# 300 numbered lines over about 1.5 s, then the marker.
_WRITER = b"""for i in $(seq 1 300); do printf 'line %04d of the job log\\n' "$i"; sleep 0.005; done
echo JOB-DONE
"""


def _start_writer(shell: object, tmp_path: Path) -> dict[str, str]:
    paths = {n: f"{tmp_path}/job.{n}" for n in ("sh", "log", "rc", "pid")}
    shell.write_file(paths["sh"], _WRITER, mode=0o755)  # type: ignore[attr-defined]
    shell.start_detached(  # type: ignore[attr-defined]
        paths["sh"], log_path=paths["log"], status_path=paths["rc"], pid_path=paths["pid"]
    )
    return paths


def test_sshd_killed_mid_follow_and_restarted_resumes_byte_identical(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts")
    try:
        paths = _start_writer(shell, tmp_path)
        stream = shell.follow(paths["log"], heartbeat=0.05)
        seen = b""
        while seen.count(b"\n") < 20:
            seen += next(stream)
        # sshd dies with every session (the job, detached, lives on); it is back 0.3 s later.
        server.kill()
        restart = threading.Timer(0.3, server.start)
        restart.start()
        try:
            while b"JOB-DONE\n" not in seen:
                seen += next(stream)
        finally:
            restart.join()
        stream.close()
        assert seen == Path(paths["log"]).read_bytes()
        assert shell.connection.connections_made == 2
        assert _status_once_ended(shell, paths).exit_code == 0
    finally:
        shell.close()


def _status_once_ended(shell: SshShell, paths: dict[str, str]) -> DetachedStatus:
    """The job's status once its wrapper has written it: the marker reaches the log a moment
    before the wrapper records the exit code, so one look right after the marker can still see
    the job running."""
    deadline = time.monotonic() + 10
    while True:
        status = shell.detached_status(pid_path=paths["pid"], status_path=paths["rc"])
        if not status.running or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def test_commands_after_a_drop_reconnect(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    shell = connect_shell(server, ssh_client_key, tmp_path / "known_hosts")
    try:
        assert shell.run("echo before", timeout=10).stdout == b"before\n"
        server.kill_sessions()
        assert shell.run("echo after", timeout=10).stdout == b"after\n"
        assert shell.read_file(str(tmp_path / "known_hosts")).startswith(b"[127.0.0.1]")
        assert shell.connection.connections_made == 2
    finally:
        shell.close()


def test_a_changed_host_key_is_refused_naming_the_pod_and_both_fingerprints(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    import paramiko

    server = start_sshd()
    pins = tmp_path / "state" / "known_hosts"
    first = connect_shell(server, ssh_client_key, pins, pod="pod-7")
    first.run("true", timeout=10)
    first.close()
    old = paramiko.Ed25519Key.from_private_key_file(str(server.host_key_path))
    pinned_bytes = pins.read_bytes()
    # The same address now answers with another machine's key.
    server.stop()
    generate_key(server.host_key_path, comment="another-machine")
    server.start()
    new = paramiko.Ed25519Key.from_private_key_file(str(server.host_key_path))
    second = connect_shell(server, ssh_client_key, pins, pod="pod-7")
    with pytest.raises(HostKeyRejected) as caught:
        second.run("true", timeout=10)
    message = str(caught.value)
    assert "pod pod-7" in message and "\n" not in message
    assert fingerprint(old) in message and fingerprint(new) in message
    assert pins.read_bytes() == pinned_bytes  # the pin is never replaced silently
    assert server.accepted_logins() == 1  # refused before authenticating
    require_executable("rsync")
    sync = RsyncFileSync(target_for(server, ssh_client_key, pod="pod-7"), known_hosts=pins)
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(HostKeyRejected, match="pod pod-7"):
        sync.push(str(tmp_path / "f"), f"{tmp_path}/out/")


def test_a_host_offering_another_key_type_is_refused(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    pins = tmp_path / "known_hosts"
    # Pinned: an ecdsa key this server does not have.
    other = tmp_path / "other_ecdsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", str(other)], check=True)
    key_type, key_data = other.with_name("other_ecdsa.pub").read_text().split()[:2]
    pins.write_text(f"[127.0.0.1]:{sshd.port} {key_type} {key_data}\n")
    shell = connect_shell(sshd, ssh_client_key, pins, pod="pod-8")
    with pytest.raises(HostKeyRejected, match="pod pod-8"):
        shell.run("true", timeout=10)


def test_a_job_killed_without_its_marker_is_seen_as_vanished(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    shell = connect_shell(sshd, ssh_client_key, tmp_path / "known_hosts")
    try:
        shell.write_file(f"{tmp_path}/job.sh", b"echo working\nsleep 300\n", mode=0o755)
        paths = {n: f"{tmp_path}/job.{n}" for n in ("log", "rc", "pid")}
        pid = shell.start_detached(
            f"{tmp_path}/job.sh",
            log_path=paths["log"],
            status_path=paths["rc"],
            pid_path=paths["pid"],
        )
        stream = shell.follow(paths["log"], heartbeat=0.05)
        seen = b""
        while b"working" not in seen:
            seen += next(stream)
        os.killpg(pid, signal.SIGKILL)  # the OOM killer, a reboot: no status, no marker
        deadline = time.monotonic() + 10
        status = shell.detached_status(pid_path=paths["pid"], status_path=paths["rc"])
        while status.running and time.monotonic() < deadline:
            assert next(stream) == b""  # the log says nothing more
            status = shell.detached_status(pid_path=paths["pid"], status_path=paths["rc"])
        stream.close()
        assert status.vanished
    finally:
        shell.close()

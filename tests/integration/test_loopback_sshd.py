"""The loopback sshd launcher: real logins, pinned host key, command recording, faults."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import paramiko
import pytest

from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, SshdError, generate_key


def connect(server: LoopbackSshd, key: SshClientKey) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    key_type, key_data = server.host_public_key.split()[:2]
    assert key_type == "ssh-ed25519"
    client.get_host_keys().add(
        f"[{server.host}]:{server.port}",
        key_type,
        paramiko.Ed25519Key(data=base64.b64decode(key_data)),
    )
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        server.host,
        port=server.port,
        username="root",
        key_filename=str(key.private_path),
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
    )
    return client


def run(client: paramiko.SSHClient, command: str) -> tuple[int, bytes]:
    _, stdout, _ = client.exec_command(command, timeout=10)
    out = stdout.read()
    return stdout.channel.recv_exit_status(), out


def test_a_client_logs_in_with_the_pinned_host_key_and_runs_commands(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey
) -> None:
    client = connect(sshd, ssh_client_key)
    try:
        assert run(client, "echo hi; exit 3") == (3, b"hi\n")
    finally:
        client.close()
    assert sshd.accepted_logins() >= 1


def test_an_unknown_key_is_refused(sshd: LoopbackSshd, tmp_path: Path) -> None:
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    path = f"{tmp_path}/stranger"
    generate_key(path)
    with pytest.raises(paramiko.AuthenticationException):
        client.connect(
            sshd.host,
            port=sshd.port,
            username="root",
            key_filename=path,
            look_for_keys=False,
            allow_agent=False,
            timeout=10,
        )
    client.close()


def test_recorded_commands_and_logins_are_counted_per_server(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    client = connect(server, ssh_client_key)
    try:
        assert run(client, "echo one") == (0, b"one\n")
        assert run(client, "printf two") == (0, b"two")
        sftp = client.open_sftp()  # the sftp subsystem still works behind the wrapper
        probe = str(tmp_path / "sftp-probe")  # the test's own path: other runs may be at it too
        with sftp.open(probe, "w") as handle:
            handle.write(b"x")
        sftp.remove(probe)
        sftp.close()
    finally:
        client.close()
    commands = server.recorded_commands()
    assert commands[:2] == ["echo one", "printf two"]
    assert "sftp" in commands[2]
    assert server.accepted_logins() == 1


def test_restart_keeps_port_and_host_key_and_drops_live_sessions(
    start_sshd: StartSshd, ssh_client_key: SshClientKey
) -> None:
    server = start_sshd()
    port, host_key = server.port, server.host_public_key
    client = connect(server, ssh_client_key)
    transport = client.get_transport()
    assert transport is not None
    # A process started through ssh but detached from it survives the session's death.
    _, out = run(client, "setsid sleep 30 >/dev/null 2>&1 < /dev/null & echo $!")
    survivor = int(out)
    assert server.kill_sessions() >= 1
    transport.join(5)
    assert not transport.is_active()
    server.restart()
    assert (server.port, server.host_public_key) == (port, host_key)
    again = connect(server, ssh_client_key)
    try:
        assert run(again, f"kill -0 {survivor} && echo alive")[1] == b"alive\n"
        run(again, f"kill {survivor}")
    finally:
        again.close()
        client.close()


def test_a_killed_server_refuses_connections(start_sshd: StartSshd) -> None:
    server = start_sshd()
    server.kill()
    assert not server.running
    with pytest.raises(OSError):
        socket.create_connection((server.host, server.port), timeout=2).close()


def test_an_sshd_that_exits_at_start_reports_its_log(ssh_client_key: SshClientKey) -> None:
    server = LoopbackSshd([ssh_client_key.public_line])
    try:
        server.start()
        server.stop()
        # A second server on the same port cannot bind: sshd exits, the log says why.
        clash = LoopbackSshd([ssh_client_key.public_line], port=server.port)
        blocker = socket.socket()
        blocker.bind((server.host, server.port))
        blocker.listen()
        try:
            with pytest.raises(SshdError, match="exited"):
                clash.start()
        finally:
            blocker.close()
            clash.cleanup()
    finally:
        server.cleanup()


def test_missing_sshd_binary_is_one_clear_error(ssh_client_key: SshClientKey) -> None:
    server = LoopbackSshd([ssh_client_key.public_line], sshd_path="/nonexistent/sshd")
    try:
        with pytest.raises(SshdError, match="not installed"):
            server.start()
    finally:
        server.cleanup()

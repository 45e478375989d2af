"""SshConnection.warm_up against a real sshd: the dial (and the SFTP session) started in the
background is the run's one connection, its errors are the very ones a dial of its own raises,
a first contact's key is pinned only when the connection is used, and closing it first leaves
neither a pin nor a session behind."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from helpers.ssh_adapters import connect_shell, pin_then_rekey, use_first_contact, wait_for
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key
from pegboard.adapters.ssh_connection import SftpUnavailable, SshConnection, SshTarget
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.errors import Unauthorized, Unreachable
from pegboard.domain.ports.remote_shell import HostKeyRejected

_SESSION_ENDS = ("Disconnected from", "Connection closed by", "Read error from remote host")


def sessions_ended(server: LoopbackSshd) -> int:
    """Logged-in sessions sshd saw end (its VERBOSE log), whoever closed them."""
    lines = server.log_text().splitlines()
    first_login = next(i for i, line in enumerate(lines) if "Accepted publickey" in line)
    return sum(1 for line in lines[first_login:] if any(end in line for end in _SESSION_ENDS))


def test_a_warm_up_is_the_one_connection_and_opens_sftp_once(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    pins = tmp_path / "state" / "known_hosts"
    shell = connect_shell(server, ssh_client_key, pins, cwd=str(tmp_path))
    shell.connection.warm_up()
    assert wait_for(lambda: server.accepted_logins() == 1)
    use_first_contact(shell, pins)
    assert server.accepted_logins() == 1
    assert shell.connection.connections_made == 1
    sftp_sessions = [c for c in server.recorded_commands() if "sftp" in c]
    assert len(sftp_sessions) == 1, sftp_sessions


def test_closing_before_use_leaves_no_pin_and_no_session(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    pins = tmp_path / "known_hosts"
    shell = connect_shell(server, ssh_client_key, pins)
    shell.connection.warm_up()
    assert wait_for(lambda: server.accepted_logins() == 1)
    shell.close()
    assert wait_for(lambda: sessions_ended(server) == 1), server.log_text()
    assert not pins.exists()
    with pytest.raises(Exception, match="closed"):
        shell.run("true", timeout=5)


def test_closing_while_the_dial_hangs_returns_at_once(tmp_path: Path) -> None:
    with socket.socket() as silent:  # listens, never speaks SSH
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        connection = SshConnection(
            SshTarget("127.0.0.1", silent.getsockname()[1], key_path="/dev/null"),
            pins=PinnedHostKeys(tmp_path / "kh", pod="p"),
            connect_timeout=3,
        )
        connection.warm_up()
        started = time.monotonic()
        connection.close()
        assert time.monotonic() - started < 0.5
    assert not (tmp_path / "kh").exists()


def test_a_refused_key_is_the_same_one_line(
    sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    generate_key(stranger)
    messages = []
    for early in (False, True):
        connection = SshConnection(
            SshTarget(sshd.host, sshd.port, key_path=str(stranger), pod="pod-x"),
            pins=PinnedHostKeys(tmp_path / f"known_hosts-{early}", pod="pod-x"),
        )
        if early:
            connection.warm_up()
        with pytest.raises(Unauthorized) as caught:
            SshShell(connection).run("true", timeout=10)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "\n" not in messages[1] and "authentication refused" in messages[1]


def test_a_closed_port_is_the_same_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    connection = SshConnection(
        SshTarget("127.0.0.1", closed_port, key_path="/dev/null"),
        pins=PinnedHostKeys(tmp_path / "kh", pod="p"),
        connect_timeout=2,
    )
    connection.warm_up()
    with pytest.raises(Unreachable, match="connection refused"):
        connection.connect()
    assert not (tmp_path / "kh").exists()


def test_a_changed_host_key_is_refused_before_authenticating(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    pins = tmp_path / "known_hosts"
    pinned = pin_then_rekey(server, ssh_client_key, pins, pod="pod-7")
    second = connect_shell(server, ssh_client_key, pins, pod="pod-7")
    second.connection.warm_up()
    with pytest.raises(HostKeyRejected, match="pod pod-7") as caught:
        second.run("true", timeout=10)
    assert "\n" not in str(caught.value)
    assert pins.read_bytes() == pinned
    assert server.accepted_logins() == 1  # the early dial offered no credential either


def test_a_host_without_sftp_still_says_so_once_and_uses_the_shell(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True, sftp_subsystem=False)
    shell = connect_shell(server, ssh_client_key, tmp_path / "kh", cwd=str(tmp_path))
    shell.connection.warm_up()
    try:
        with pytest.raises(SftpUnavailable, match="SFTP does not work on this host"):
            shell.connection.sftp()
        shell.write_file("f", b"over the shell", mode=0o600)
        assert shell.read_file("f") == b"over the shell"
    finally:
        shell.close()
    assert server.accepted_logins() == 1

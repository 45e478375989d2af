"""prestart against a real sshd: the dial (TCP, key exchange, login, SFTP) begun before the run's
SshConnection exists becomes that connection's background dial when it warms up (one TCP
connection, one login), only for the very target and timeout it dials and while no pin is on
file for the host; its errors are the ones a dial of its own raises, a pin on file is still
checked before the connection's own dial logs in, and a dial nobody takes pins nothing."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.ssh_adapters import (
    connect_shell,
    pin_then_rekey,
    target_for,
    use_first_contact,
    wait_for,
)
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key
from pegboard.adapters.ssh_connection import (
    SshConnection,
    SshTarget,
    discard_prestarted,
    prestart,
)
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.errors import Unauthorized, Unreachable
from pegboard.domain.ports.remote_shell import HostKeyRejected


@pytest.fixture(autouse=True)
def _no_prestart_left() -> Iterator[None]:
    yield
    discard_prestarted()


_SESSION_ENDS = ("Disconnected from", "Connection closed by", "Read error from remote host")


def sessions_ended(server: LoopbackSshd) -> int:
    """Logged-in connections sshd saw end (its VERBOSE log), whoever closed them."""
    after_first_login = server.log_text().split("Accepted publickey", 1)[-1]
    return sum(after_first_login.count(end) for end in _SESSION_ENDS)


def tcp_connections(server: LoopbackSshd) -> int:
    """TCP connections sshd accepted (its VERBOSE log), the readiness probe's included."""
    return server.log_text().count("Connection from ")


def test_a_prestarted_dial_is_the_connections_one_connection(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    before = tcp_connections(server)
    prestart(target_for(server, ssh_client_key), 10.0)
    assert wait_for(lambda: server.accepted_logins() == 1)
    pins = tmp_path / "known_hosts"
    shell = connect_shell(server, ssh_client_key, pins, connect_timeout=10.0, cwd=str(tmp_path))
    shell.connection.warm_up()
    use_first_contact(shell, pins)
    assert tcp_connections(server) == before + 1
    assert server.accepted_logins() == 1
    assert shell.connection.connections_made == 1
    assert len([c for c in server.recorded_commands() if "sftp" in c]) == 1


def test_only_the_same_target_and_timeout_take_it(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    before = tcp_connections(server)
    prestart(target_for(server, ssh_client_key), 5.0)
    prestart(target_for(server, ssh_client_key, pod="another-pod"), 10.0)
    shell = connect_shell(server, ssh_client_key, tmp_path / "kh", connect_timeout=10.0)
    shell.connection.warm_up()
    try:
        shell.run("true", timeout=10)
    finally:
        shell.close()
    assert wait_for(lambda: tcp_connections(server) == before + 3)  # its own dial too
    discard_prestarted()
    assert wait_for(lambda: sessions_ended(server) == 3), server.log_text()


def test_a_dial_nobody_takes_is_closed_and_pins_nothing(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    prestart(target_for(server, ssh_client_key), 10.0)
    assert wait_for(lambda: server.accepted_logins() == 1)
    discard_prestarted()
    assert wait_for(lambda: sessions_ended(server) == 1), server.log_text()
    assert list(tmp_path.iterdir()) == []


def test_a_refused_key_and_a_closed_port_are_the_same_one_line(
    sshd: LoopbackSshd, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    generate_key(stranger)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    for target in (
        SshTarget(sshd.host, sshd.port, key_path=str(stranger), pod="pod-x"),
        SshTarget("127.0.0.1", closed_port, key_path="/dev/null", pod="pod-x"),
    ):
        messages = []
        for prestarted in (False, True):
            if prestarted:
                prestart(target, 2.0)
            connection = SshConnection(
                target,
                pins=PinnedHostKeys(tmp_path / f"kh-{prestarted}", pod="pod-x"),
                connect_timeout=2.0,
            )
            connection.warm_up()
            with pytest.raises((Unauthorized, Unreachable)) as caught:
                SshShell(connection).run("true", timeout=10)
            messages.append(f"{type(caught.value).__name__}: {caught.value}")
        assert messages[0] == messages[1]
        assert "\n" not in messages[1]
    assert not list(tmp_path.glob("kh-*"))


def test_with_a_pin_on_file_the_connection_dials_itself_and_refuses_a_changed_key(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    """The prestarted dial checked no pin before logging in, so a connection with a pin on file
    does not take it: its own dial checks the pin first (a run's pin file is new: it always
    takes it)."""
    server = start_sshd()
    pins = tmp_path / "known_hosts"
    pinned = pin_then_rekey(server, ssh_client_key, pins, pod="pod-7")
    prestart(target_for(server, ssh_client_key, pod="pod-7"), 10.0)
    assert wait_for(lambda: server.accepted_logins() == 2)
    second = connect_shell(server, ssh_client_key, pins, pod="pod-7")
    second.connection.warm_up()
    with pytest.raises(HostKeyRejected, match="pod pod-7") as caught:
        second.run("true", timeout=10)
    assert "\n" not in str(caught.value)
    assert pins.read_bytes() == pinned
    assert server.accepted_logins() == 2  # its own dial refused before authenticating


def test_with_the_same_pin_on_file_it_still_works(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    pins = tmp_path / "known_hosts"
    first = connect_shell(server, ssh_client_key, pins)
    first.run("true", timeout=10)
    first.close()
    before = tcp_connections(server)
    prestart(target_for(server, ssh_client_key), 10.0)
    second = connect_shell(server, ssh_client_key, pins)
    second.connection.warm_up()
    try:
        assert second.run("echo again", timeout=10).stdout == b"again\n"
    finally:
        second.close()
    assert tcp_connections(server) == before + 2

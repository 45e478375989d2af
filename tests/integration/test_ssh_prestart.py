"""prestart_handshake against a real sshd: the TCP connection and key exchange begun before the
run's SshConnection exists are that connection's (one TCP connection a run), only for the very
host, port and timeout it dials; its errors are the ones a dial of its own raises, the pin is
still checked before any credential is offered, and a handshake nobody takes leaves neither a
login nor a pin."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.ssh_adapters import connect_shell, pin_then_rekey, wait_for
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.sandboxes.sshd import LoopbackSshd
from pegboard.adapters.ssh_connection import (
    SshConnection,
    SshTarget,
    discard_prestarted,
    prestart_handshake,
)
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.domain.errors import Unreachable
from pegboard.domain.ports.remote_shell import HostKeyRejected


@pytest.fixture(autouse=True)
def _no_prestart_left() -> Iterator[None]:
    yield
    discard_prestarted()


def tcp_connections(server: LoopbackSshd) -> int:
    """TCP connections sshd accepted (its VERBOSE log), the readiness probe's included."""
    return server.log_text().count("Connection from ")


def test_a_prestarted_key_exchange_is_the_connections_one_connection(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    before = tcp_connections(server)
    prestart_handshake(server.host, server.port, 10.0)
    assert wait_for(lambda: tcp_connections(server) == before + 1)
    assert server.accepted_logins() == 0, "a prestart offers no credential"
    pins = tmp_path / "known_hosts"
    shell = connect_shell(server, ssh_client_key, pins, connect_timeout=10.0)
    try:
        assert shell.run("echo hi", timeout=10).stdout == b"hi\n"
    finally:
        shell.close()
    assert tcp_connections(server) == before + 1
    assert server.accepted_logins() == 1
    assert pins.exists()  # first contact pinned, as after a dial of its own


def test_only_the_same_host_port_and_timeout_take_it(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    before = tcp_connections(server)
    prestart_handshake(server.host, server.port, 5.0)
    shell = connect_shell(server, ssh_client_key, tmp_path / "kh", connect_timeout=10.0)
    try:
        shell.run("true", timeout=10)
    finally:
        shell.close()
    assert tcp_connections(server) == before + 2  # its own dial: the timeouts differ
    discard_prestarted()
    assert server.accepted_logins() == 1


def test_a_handshake_nobody_takes_is_closed_with_no_login_and_no_pin(
    start_sshd: StartSshd, tmp_path: Path
) -> None:
    server = start_sshd()
    before = tcp_connections(server)
    prestart_handshake(server.host, server.port, 10.0)
    assert wait_for(lambda: tcp_connections(server) == before + 1)
    time.sleep(0.2)  # let the key exchange finish
    discard_prestarted()
    assert wait_for(
        lambda: "Connection closed by" in server.log_text().split("Connection from")[-1]
    )
    assert server.accepted_logins() == 0
    assert list(tmp_path.iterdir()) == []


def test_a_closed_port_is_the_same_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    messages = []
    for prestarted in (False, True):
        if prestarted:
            prestart_handshake("127.0.0.1", closed_port, 2.0)
        connection = SshConnection(
            SshTarget("127.0.0.1", closed_port, key_path="/dev/null"),
            pins=PinnedHostKeys(tmp_path / "kh", pod="p"),
            connect_timeout=2.0,
        )
        with pytest.raises(Unreachable) as caught:
            connection.connect()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "connection refused" in messages[1] and "\n" not in messages[1]
    assert not (tmp_path / "kh").exists()


def test_a_changed_host_key_is_still_refused_before_authenticating(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    pins = tmp_path / "known_hosts"
    pinned = pin_then_rekey(server, ssh_client_key, pins, pod="pod-7")
    prestart_handshake(server.host, server.port, 10.0)
    second = connect_shell(server, ssh_client_key, pins, pod="pod-7")
    with pytest.raises(HostKeyRejected, match="pod pod-7") as caught:
        second.run("true", timeout=10)
    assert "\n" not in str(caught.value)
    assert pins.read_bytes() == pinned
    assert server.accepted_logins() == 1  # the prestarted exchange offered no credential


def test_a_pinned_host_exchanges_again_asking_for_the_pinned_key_type(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    """A prestart knows no pin, so it cannot ask for the pinned key's algorithm; a connection
    with a pin does not take it (a run's pin file is new, so a run always can)."""
    server = start_sshd()
    pins = tmp_path / "known_hosts"
    first = connect_shell(server, ssh_client_key, pins)
    first.run("true", timeout=10)
    first.close()
    before = tcp_connections(server)
    prestart_handshake(server.host, server.port, 10.0)
    second = connect_shell(server, ssh_client_key, pins)
    try:
        assert second.run("echo again", timeout=10).stdout == b"again\n"
    finally:
        second.close()
    assert tcp_connections(server) == before + 2
    assert server.accepted_logins() == 2

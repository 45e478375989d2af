"""Build the SSH adapters against a LoopbackSshd (the test machine is the "pod")."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from helpers.sshd import SshClientKey
from pegboard.adapters.sandboxes.sshd import LoopbackSshd, generate_key
from pegboard.adapters.ssh_connection import Backoff, SshConnection, SshTarget
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_shell import SshShell

FAST_BACKOFF = Backoff(first=0.05, cap=0.5, budget=10.0)


def target_for(server: LoopbackSshd, key: SshClientKey, *, pod: str = "pod-test") -> SshTarget:
    return SshTarget(
        host=server.host, port=server.port, user="root", key_path=str(key.private_path), pod=pod
    )


def connect_shell(
    server: LoopbackSshd,
    key: SshClientKey,
    pins_path: Path,
    *,
    pod: str = "pod-test",
    cwd: str | None = None,
    backoff: Backoff = FAST_BACKOFF,
    connect_timeout: float = 10.0,
) -> SshShell:
    connection = SshConnection(
        target_for(server, key, pod=pod),
        pins=PinnedHostKeys(pins_path, pod=pod),
        backoff=backoff,
        connect_timeout=connect_timeout,
    )
    return SshShell(connection, cwd=cwd)


def wait_for(condition: Callable[[], bool], budget: float = 10.0) -> bool:
    """Whether `condition` came true within `budget` seconds (polled every 20 ms)."""
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def pin_then_rekey(server: LoopbackSshd, key: SshClientKey, pins_path: Path, *, pod: str) -> bytes:
    """Pin `server`'s host key through one connection, then give the server a new one (a
    reinstalled machine, or an impostor); the pin file's bytes."""
    first = connect_shell(server, key, pins_path, pod=pod)
    first.run("true", timeout=10)
    first.close()
    pinned = pins_path.read_bytes()
    server.stop()
    generate_key(server.host_key_path, comment="another-machine")
    server.start()
    return pinned


def use_first_contact(shell: SshShell, pins: Path) -> None:
    """A warmed-up shell's first use: its host key is pinned only now, then one command and one
    file written and read back work; the shell is closed."""
    assert not pins.exists(), "a first contact's key is pinned when the connection is used"
    try:
        assert shell.run("echo hi", timeout=10).stdout == b"hi\n"
        assert pins.exists()
        shell.write_file("f", b"data", mode=0o600)
        assert shell.read_file("f") == b"data"
    finally:
        shell.close()

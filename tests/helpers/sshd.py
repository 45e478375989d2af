"""pytest fixtures for a real sshd on 127.0.0.1 (registered in tests/conftest.py).

`ssh_client_key`: an ed25519 key pair generated for this test session (never committed: sshd
and ssh refuse 0644 private keys, which is what git checks out).
`sshd`: one shared server for the session that accepts that key.
`start_sshd`: a factory for servers a test may kill, restart or record commands on; each is
stopped at the end of the test.
Without /usr/sbin/sshd these skip locally and fail under CI=true.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from helpers.components import require_executable
from pegboard.adapters.sandboxes.sshd import SSHD_PATH, LoopbackSshd, generate_key


@attrs.frozen
class SshClientKey:
    private_path: Path
    public_line: str


def require_sshd() -> None:
    require_executable("sshd", path=SSHD_PATH, install_hint="apt-get install openssh-server")
    require_executable("ssh-keygen", install_hint="apt-get install openssh-client")


@pytest.fixture(scope="session")
def ssh_client_key(tmp_path_factory: pytest.TempPathFactory) -> SshClientKey:
    require_sshd()
    path = tmp_path_factory.mktemp("ssh-client") / "id_ed25519"
    return SshClientKey(path, generate_key(path, comment="pegboard-test-client"))


@pytest.fixture(scope="session")
def sshd(ssh_client_key: SshClientKey) -> Iterator[LoopbackSshd]:
    with LoopbackSshd([ssh_client_key.public_line]) as server:
        yield server


StartSshd = Callable[..., LoopbackSshd]


@pytest.fixture
def start_sshd(ssh_client_key: SshClientKey) -> Iterator[StartSshd]:
    started: list[LoopbackSshd] = []

    def start(**options: object) -> LoopbackSshd:
        server = LoopbackSshd([ssh_client_key.public_line], **options)  # type: ignore[arg-type]
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.cleanup()

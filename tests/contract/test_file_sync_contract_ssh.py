"""FileSync contract against RsyncFileSync (real rsync over real ssh) and SftpFileSync (paramiko's
SFTP on the run's connection), both to a real sshd on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.file_sync_contract import FileSyncContract
from helpers.components import require_executable
from helpers.ssh_adapters import connect_shell, target_for
from helpers.sshd import SshClientKey
from pegboard.adapters.rsync_file_sync import RsyncFileSync
from pegboard.adapters.sandboxes.sshd import LoopbackSshd
from pegboard.adapters.sftp_file_sync import SftpFileSync


class _Driver:
    """The "pod" is this machine through sshd, so pod paths are local paths."""

    def __init__(self, server: LoopbackSshd, key: SshClientKey, tmp_path: Path) -> None:
        pins = tmp_path / "state" / "known_hosts"
        shell = connect_shell(server, key, pins)
        shell.run("true", timeout=10)  # first contact pins the host key rsync will require
        shell.close()
        self.sync = RsyncFileSync(target_for(server, key), known_hosts=pins)
        self.remote_root = str(tmp_path / "pod")

    def remote_write(self, path: str, data: bytes) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)

    def remote_read(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def remote_exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def remote_mode(self, path: str) -> int:
        return os.stat(path).st_mode & 0o7777


class TestRsyncOverSshContract(FileSyncContract):
    @pytest.fixture
    def driver(self, sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path) -> Any:
        require_executable("rsync", install_hint="apt-get install rsync")
        require_executable("ssh", install_hint="apt-get install openssh-client")
        return _Driver(sshd, ssh_client_key, tmp_path)


class _SftpDriver(_Driver):
    def __init__(self, server: LoopbackSshd, key: SshClientKey, tmp_path: Path) -> None:
        super().__init__(server, key, tmp_path)
        self.shell = connect_shell(server, key, tmp_path / "state" / "known_hosts")
        self.sync = SftpFileSync(self.shell.connection)  # type: ignore[assignment]


class TestSftpContract(FileSyncContract):
    """The fallback for hosts without rsync: same contract over the run's own connection."""

    @pytest.fixture
    def driver(
        self, sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
    ) -> Iterator[Any]:
        made = _SftpDriver(sshd, ssh_client_key, tmp_path)
        yield made
        made.shell.close()

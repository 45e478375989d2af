"""RemoteShell contract against SshShell: real paramiko against a real sshd on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.remote_shell_contract import RemoteShellContract
from helpers.ssh_adapters import connect_shell
from helpers.sshd import SshClientKey
from pegboard.adapters.fakes import FakeJob
from pegboard.adapters.sandboxes.sshd import LoopbackSshd
from pegboard.domain.ports.remote_shell import CommandResult


class _SshDriver:
    def __init__(self, server: LoopbackSshd, key: SshClientKey, tmp_path: Path) -> None:
        self.root = str(tmp_path / "pod")
        os.makedirs(self.root)
        self.shell = connect_shell(server, key, tmp_path / "state" / "known_hosts")

    def expect(self, command: str, result: CommandResult, duration: float = 0.0) -> None:
        pass  # the real shell does what the command says

    def script_job(self, path: str, body: str, job: FakeJob) -> None:
        self.shell.write_file(path, body.encode(), mode=0o755)

    def file_mode(self, path: str) -> int:
        return os.stat(path).st_mode & 0o7777

    def settle(self) -> None:
        time.sleep(0.02)

    def stop_jobs(self) -> None:
        for pid_file in Path(self.root).glob("*.pid"):
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


class TestSshShellContract(RemoteShellContract):
    @pytest.fixture
    def driver(
        self, sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path
    ) -> Iterator[Any]:
        driver = _SshDriver(sshd, ssh_client_key, tmp_path)
        yield driver
        driver.stop_jobs()
        driver.shell.close()

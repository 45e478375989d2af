"""RemoteShell contract against FakeShell."""

from __future__ import annotations

import re
from typing import Any

import pytest

from contract.remote_shell_contract import RemoteShellContract
from pegboard.adapters.fakes import FakeClock, FakeHost, FakeJob, FakeShell
from pegboard.domain.ports.remote_shell import CommandResult


class _FakeDriver:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.host = FakeHost(clock=self.clock)
        self.shell = FakeShell(self.host)
        self.root = "/workspace/contract"

    def expect(self, command: str, result: CommandResult, duration: float = 0.0) -> None:
        self.host.on_command(
            "^" + re.escape(command) + "$",
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            duration=duration,
        )

    def script_job(self, path: str, body: str, job: FakeJob) -> None:
        self.shell.write_file(path, body.encode(), mode=0o755)
        self.host.script_job(job)

    def file_mode(self, path: str) -> int:
        return self.host.mode(path)

    def settle(self) -> None:
        self.clock.advance(0.05)

    def stop_jobs(self) -> None:
        self.host.kill_jobs()


class TestFakeShellContract(RemoteShellContract):
    @pytest.fixture
    def driver(self) -> Any:
        return _FakeDriver()

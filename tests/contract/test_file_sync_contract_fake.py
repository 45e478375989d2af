"""FileSync contract against FakeFileSync."""

from __future__ import annotations

from typing import Any

import pytest

from contract.file_sync_contract import FileSyncContract
from pegboard.adapters.fakes import FakeFileSync, FakeHost


class _Driver:
    def __init__(self) -> None:
        self.host = FakeHost()
        self.sync = FakeFileSync(self.host)
        self.remote_root = "/workspace/contract"

    def remote_write(self, path: str, data: bytes) -> None:
        self.host.put(path, data)

    def remote_read(self, path: str) -> bytes:
        return self.host.read(path)

    def remote_exists(self, path: str) -> bool:
        return self.host.exists(path)

    def remote_mode(self, path: str) -> int:
        return self.host.mode(path)


class TestFakeFileSyncContract(FileSyncContract):
    @pytest.fixture
    def driver(self) -> Any:
        return _Driver()

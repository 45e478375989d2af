"""FileSync contract against LocalFileSync: with the real rsync, and with the Python fallback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from contract.file_sync_contract import FileSyncContract
from helpers.components import require_executable
from pegboard.adapters.local_file_sync import LocalFileSync, parse_rsync_stats
from pegboard.adapters.local_pod_paths import LocalPodPaths


class _Driver:
    def __init__(self, root: Path, rsync: str | None) -> None:
        self.paths = LocalPodPaths(root, "pod-1")
        self.paths.fs_root.mkdir(parents=True)  # the pod exists (LocalGpuCloud made it)
        self.sync = LocalFileSync(self.paths, rsync=rsync)
        self.remote_root = "/workspace/contract"

    def remote_write(self, path: str, data: bytes) -> None:
        host = Path(self.paths.to_host(path))
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_bytes(data)

    def remote_read(self, path: str) -> bytes:
        return Path(self.paths.to_host(path)).read_bytes()

    def remote_exists(self, path: str) -> bool:
        return os.path.lexists(self.paths.to_host(path))

    def remote_mode(self, path: str) -> int:
        return os.stat(self.paths.to_host(path)).st_mode & 0o7777


class TestLocalRsyncContract(FileSyncContract):
    @pytest.fixture
    def driver(self, tmp_path: Path) -> Any:
        return _Driver(tmp_path / "pods", require_executable("rsync"))


class TestLocalPythonCopyContract(FileSyncContract):
    @pytest.fixture
    def driver(self, tmp_path: Path) -> Any:
        return _Driver(tmp_path / "pods", None)


def test_parse_rsync_stats() -> None:
    output = (
        "Number of files: 5 (reg: 3, dir: 2)\n"
        "Number of regular files transferred: 2\n"
        "Total file size: 1,024 bytes\n"
        "Total transferred file size: 1,018 bytes\n"
    )
    result = parse_rsync_stats(output)
    assert (result.bytes_transferred, result.files) == (1018, 2)

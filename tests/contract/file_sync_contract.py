"""The FileSync contract, written once and run against every adapter (not collected itself).

A test module subclasses FileSyncContract and provides a `driver` fixture with:
  sync                              the FileSync under test
  remote_root                       an absolute pod directory for this test
  remote_write(path, data)          create a pod file
  remote_read(path) -> bytes        read a pod file
  remote_exists(path) -> bool
  remote_mode(path) -> int          permission bits of a pod file
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.ports.file_sync import FileSync


def _project(root: Path) -> Path:
    files = {
        "main.py": b"print('hi')\n",
        "pkg/mod.py": b"x = 1\n",
        "pkg/__pycache__/mod.cpython-311.pyc": b"\x00" * 10,
        "pkg/stale.pyc": b"\x00" * 5,
        ".git/HEAD": b"ref: refs/heads/main\n",
        "data/big.bin": b"z" * 1000,
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


class FileSyncContract:
    def test_is_a_file_sync(self, driver: Any) -> None:
        assert isinstance(driver.sync, FileSync)

    def test_push_contents_with_excludes_counts_bytes_then_skips_unchanged(
        self, driver: Any, tmp_path: Path
    ) -> None:
        src = _project(tmp_path / "proj")
        dest = f"{driver.remote_root}/proj"
        excludes = [".git/", "**/__pycache__/", "*.pyc"]
        first = driver.sync.push(f"{src}/", dest, excludes=excludes)
        assert driver.remote_read(f"{dest}/main.py") == b"print('hi')\n"
        assert driver.remote_read(f"{dest}/pkg/mod.py") == b"x = 1\n"
        assert not driver.remote_exists(f"{dest}/.git/HEAD")
        assert not driver.remote_exists(f"{dest}/pkg/__pycache__/mod.cpython-311.pyc")
        assert not driver.remote_exists(f"{dest}/pkg/stale.pyc")
        assert (first.files, first.bytes_transferred) == (3, 12 + 6 + 1000)
        again = driver.sync.push(f"{src}/", dest, excludes=excludes)
        assert (again.files, again.bytes_transferred) == (0, 0)

    def test_push_without_trailing_slash_copies_the_directory_itself(
        self, driver: Any, tmp_path: Path
    ) -> None:
        src = _project(tmp_path / "proj")
        driver.sync.push(str(src), driver.remote_root, excludes=[".git/"])
        assert driver.remote_read(f"{driver.remote_root}/proj/main.py") == b"print('hi')\n"

    def test_delete_only_when_asked(self, driver: Any, tmp_path: Path) -> None:
        src = tmp_path / "src"
        src.mkdir()
        (src / "keep.txt").write_bytes(b"k")
        dest = f"{driver.remote_root}/d"
        driver.remote_write(f"{dest}/extra.txt", b"e")
        driver.sync.push(f"{src}/", dest)
        assert driver.remote_exists(f"{dest}/extra.txt")
        driver.sync.push(f"{src}/", dest, delete=True)
        assert not driver.remote_exists(f"{dest}/extra.txt")
        assert driver.remote_read(f"{dest}/keep.txt") == b"k"

    def test_push_chmod_applies_to_new_and_existing_files(
        self, driver: Any, tmp_path: Path
    ) -> None:
        secret = tmp_path / "s" / "token.env"
        secret.parent.mkdir()
        secret.write_bytes(b"T=1\n")
        secret.chmod(0o644)
        dest = f"{driver.remote_root}/sec/"
        driver.sync.push(str(secret), dest, chmod="F600")
        assert driver.remote_mode(f"{dest}token.env") == 0o600
        assert driver.remote_read(f"{dest}token.env") == b"T=1\n"

    def test_pull_roundtrip_keeps_local_files_unless_delete(
        self, driver: Any, tmp_path: Path
    ) -> None:
        remote = f"{driver.remote_root}/out"
        driver.remote_write(f"{remote}/result.json", b'{"ok": true}')
        driver.remote_write(f"{remote}/sub/log.txt", b"log")
        driver.remote_write(f"{remote}/skip.tmp", b"tmp")
        local = tmp_path / "artifacts"
        local.mkdir()
        (local / "mine.txt").write_bytes(b"do not delete")
        result = driver.sync.pull(f"{remote}/", str(local), excludes=["*.tmp"])
        assert (local / "result.json").read_bytes() == b'{"ok": true}'
        assert (local / "sub" / "log.txt").read_bytes() == b"log"
        assert not (local / "skip.tmp").exists()
        assert (local / "mine.txt").exists()
        assert (result.files, result.bytes_transferred) == (2, 12 + 3)
        driver.sync.pull(f"{remote}/", str(local), excludes=["*.tmp"], delete=True)
        assert not (local / "mine.txt").exists()

    def test_pull_into_missing_nested_directory(self, driver: Any, tmp_path: Path) -> None:
        driver.remote_write(f"{driver.remote_root}/o/a.txt", b"a")
        target = tmp_path / "x" / "y"
        driver.sync.pull(f"{driver.remote_root}/o/", str(target))
        assert (target / "a.txt").read_bytes() == b"a"

    def test_pull_single_file(self, driver: Any, tmp_path: Path) -> None:
        driver.remote_write(f"{driver.remote_root}/run.log", b"line\n")
        result = driver.sync.pull(f"{driver.remote_root}/run.log", f"{tmp_path}/")
        assert (tmp_path / "run.log").read_bytes() == b"line\n"
        assert result.files == 1

    def test_missing_sources_are_not_found(self, driver: Any, tmp_path: Path) -> None:
        with pytest.raises(NotFound):
            driver.sync.pull(f"{driver.remote_root}/absent/", str(tmp_path / "a"))
        with pytest.raises(NotFound):
            driver.sync.push(os.path.join(tmp_path, "absent"), f"{driver.remote_root}/x")

    def test_a_local_side_that_cannot_be_written_is_a_port_error(
        self, driver: Any, tmp_path: Path
    ) -> None:
        """The port raises PortErrors only: never the OSError of the local disk."""
        driver.remote_write(f"{driver.remote_root}/o/a.txt", b"a")
        blocker = tmp_path / "a-file"
        blocker.write_bytes(b"not a directory")
        with pytest.raises(PortError):
            driver.sync.pull(f"{driver.remote_root}/o/", str(blocker / "under"))
        with pytest.raises(PortError):
            driver.sync.pull(f"{driver.remote_root}/o/a.txt", str(blocker / "under" / "a.txt"))

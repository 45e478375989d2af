"""RemoteShell contract against LocalShell (real bash in a local pod directory)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from contract.remote_shell_contract import RemoteShellContract
from pegboard.adapters.fakes import FakeJob
from pegboard.adapters.local_pod_paths import LocalPodPaths
from pegboard.adapters.local_shell import LocalShell, kill_process_group
from pegboard.domain.errors import NotFound
from pegboard.domain.ports.remote_shell import CommandResult


class _LocalDriver:
    def __init__(self, root: Path) -> None:
        self.paths = LocalPodPaths(root, "pod-1")
        self.paths.workspace.mkdir(parents=True)  # the pod exists (LocalGpuCloud made it)
        self.shell = LocalShell(self.paths)
        self.root = "/workspace/contract"

    def expect(self, command: str, result: CommandResult, duration: float = 0.0) -> None:
        pass  # real bash does what the command says

    def script_job(self, path: str, body: str, job: FakeJob) -> None:
        self.shell.write_file(path, body.encode(), mode=0o755)

    def file_mode(self, path: str) -> int:
        return os.stat(self.paths.to_host(path)).st_mode & 0o7777

    def settle(self) -> None:
        time.sleep(0.02)

    def stop_jobs(self) -> None:
        for entry in self.paths.procs_dir.iterdir():
            kill_process_group(int(entry.name))


class TestLocalShellContract(RemoteShellContract):
    @pytest.fixture
    def driver(self, tmp_path: Path) -> Any:
        driver = _LocalDriver(tmp_path / "pods")
        yield driver
        if driver.paths.procs_dir.exists():
            driver.stop_jobs()


def test_paths_never_escape_the_pod(tmp_path: Path) -> None:
    paths = LocalPodPaths(tmp_path, "p")
    paths.workspace.mkdir(parents=True)
    shell = LocalShell(paths)
    shell.write_file("/etc/pegboard-test", b"x", mode=0o644)
    assert (paths.fs_root / "etc" / "pegboard-test").read_bytes() == b"x"
    assert not Path("/etc/pegboard-test").exists()
    assert paths.to_host(f"{paths.workspace}/a") == f"{paths.workspace}/a"
    assert paths.to_host("rel/x") == f"{paths.workspace}/rel/x"
    with pytest.raises(ValueError):
        paths.to_host("/../../outside")


def test_a_deleted_pod_is_not_found_and_its_directory_is_not_recreated(tmp_path: Path) -> None:
    """Issue 7 item 9: the shell of a pod deleted underneath a run recreated its workspace
    (a pod directory with no pod.json) and reported nothing but transient errors."""
    paths = LocalPodPaths(tmp_path, "gone")
    paths.workspace.mkdir(parents=True)
    shell = LocalShell(paths)
    assert shell.run("true", timeout=10).exit_code == 0
    import shutil

    shutil.rmtree(paths.pod_dir)
    with pytest.raises(NotFound):
        shell.run("true", timeout=10)
    with pytest.raises(NotFound):
        shell.write_file("/workspace/x", b"x", mode=0o644)
    with pytest.raises(NotFound):
        shell.detached_status(pid_path="/workspace/p", status_path="/workspace/s")
    assert not paths.pod_dir.exists()


def test_a_pod_deleted_just_before_a_command_starts_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deletion lands between the shell's check and the command's start (the workspace
    is its cwd): NotFound, which the monitor reads as "the pod is gone", not an OSError."""
    import shutil

    paths = LocalPodPaths(tmp_path, "racing")
    paths.workspace.mkdir(parents=True)
    shell = LocalShell(paths)
    real_mkdir = Path.mkdir

    def mkdir_then_deleted(self: Path, *args: object, **kwargs: object) -> None:
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]
        shutil.rmtree(paths.pod_dir)

    monkeypatch.setattr(Path, "mkdir", mkdir_then_deleted)
    with pytest.raises(NotFound):
        shell.run("true", timeout=10)


@pytest.mark.parametrize("call", ["run", "write_file", "push"])
def test_a_pod_deleted_right_after_the_shells_check_is_not_recreated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """The deletion lands between the check that the pod exists and the directories a command,
    a file or a push needs: the pod's directory stayed gone only when no mkdir(parents=True)
    made it again (a pod directory without pod.json, left behind by the run)."""
    import shutil

    from pegboard.adapters.local_file_sync import LocalFileSync
    from pegboard.domain.errors import PortError

    paths = LocalPodPaths(tmp_path / "pods", "racing")
    paths.fs_root.mkdir(parents=True)  # the pod exists, its workspace not yet
    shell = LocalShell(paths)
    source = tmp_path / "src"
    source.mkdir()
    (source / "f").write_bytes(b"x")
    real_is_dir = Path.is_dir

    def seen_then_deleted(self: Path) -> bool:
        found = real_is_dir(self)
        if found and self == paths.pod_dir:
            shutil.rmtree(paths.pod_dir)  # the deletion, just after the pod was seen
        return found

    monkeypatch.setattr(Path, "is_dir", seen_then_deleted)
    with pytest.raises(PortError):  # NotFound is one
        if call == "run":
            shell.run("true", timeout=10)
        elif call == "write_file":
            shell.write_file("/workspace/deep/x", b"x", mode=0o644)
        else:
            shutil.rmtree(paths.pod_dir)
            LocalFileSync(paths, rsync=None).push(f"{source}/", "/workspace/deep/")
    monkeypatch.undo()
    assert not paths.pod_dir.exists()

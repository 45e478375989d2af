"""GpuCloud contract against SshGpuCloud: pods are directories on a real sshd's host."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.gpu_cloud_contract import GpuCloudContract
from helpers.ssh_adapters import connect_shell, target_for
from helpers.sshd import SshClientKey, StartSshd
from pegboard.adapters.providers.ssh.adapters import SshProvider
from pegboard.adapters.providers.ssh.gpu_cloud import SshGpuCloud
from pegboard.adapters.sandboxes.sshd import LoopbackSshd
from pegboard.domain.errors import NotFound
from pegboard.domain.ports.gpu_cloud import POD_EXITED, PodRequest


class _Driver:
    def __init__(self, server: LoopbackSshd, key: SshClientKey, tmp_path: Path) -> None:
        self.shell = connect_shell(server, key, tmp_path / "state" / "known_hosts")
        self.root = tmp_path / "workspaces"
        self.cloud = SshGpuCloud(self.shell, workspaces_root=str(self.root))
        self.volume_name = "models"
        self.unknown_volume_name = None  # every name is a volume on your own machine

    def request(self, name: str) -> PodRequest:
        return PodRequest(name=name, image="img:1", gpu_id="A100", datacenter_id="LAB")

    def settle(self) -> None:
        time.sleep(0.01)


@pytest.fixture
def driver(sshd: LoopbackSshd, ssh_client_key: SshClientKey, tmp_path: Path) -> Iterator[Any]:
    made = _Driver(sshd, ssh_client_key, tmp_path)
    yield made
    made.shell.close()


class TestSshGpuCloudContract(GpuCloudContract):
    pass


def test_provision_claims_a_workspace_and_delete_removes_it(driver: Any) -> None:
    handle = driver.cloud.create_pod(driver.request("run-1"))
    status = driver.cloud.get_pod(handle.pod_id)
    assert status.workspace_root == f"{driver.root}/{handle.pod_id}/workspace"
    assert os.path.isdir(status.workspace_root)
    assert status.access is not None and status.cost_per_hour_usd == 0.0
    driver.cloud.terminate_pod(handle.pod_id)
    assert not (driver.root / handle.pod_id).exists()


def test_stop_kills_the_pods_jobs_and_keeps_the_workspace(driver: Any) -> None:
    handle = driver.cloud.create_pod(driver.request("run-2"))
    workspace = driver.cloud.workspace(handle.pod_id)
    shell = driver.cloud.shell_for(handle.pod_id)
    shell.write_file(f"{workspace}/job.sh", b"echo up\nsleep 60\n", mode=0o755)
    pid = shell.start_detached(
        f"{workspace}/job.sh",
        log_path=f"{workspace}/job.log",
        status_path=f"{workspace}/job.rc",
        pid_path=f"{workspace}/job.pid",
    )
    assert shell.run("pwd", timeout=10).stdout.decode().strip() == workspace
    assert shell.detached_status(
        pid_path=f"{workspace}/job.pid", status_path=f"{workspace}/job.rc"
    ).running
    driver.cloud.stop_pod(handle.pod_id)
    assert driver.cloud.get_pod(handle.pod_id).desired_status == POD_EXITED
    # Killed with its wrapper, so no exit status was recorded: the job vanished.
    assert shell.detached_status(
        pid_path=f"{workspace}/job.pid", status_path=f"{workspace}/job.rc"
    ).vanished
    assert not (Path(driver.cloud.pod_dir(handle.pod_id)) / "procs" / str(pid)).exists()
    assert (Path(workspace) / "job.log").read_bytes() == b"up\n"
    driver.cloud.terminate_pod(handle.pod_id)


def test_delete_kills_the_pods_running_jobs_and_removes_everything(driver: Any) -> None:
    handle = driver.cloud.create_pod(driver.request("run-4"))
    workspace = driver.cloud.workspace(handle.pod_id)
    shell = driver.cloud.shell_for(handle.pod_id)
    shell.write_file(f"{workspace}/job.sh", b"sleep 60 & sleep 60\n", mode=0o755)
    pid = shell.start_detached(
        f"{workspace}/job.sh",
        log_path=f"{workspace}/job.log",
        status_path=f"{workspace}/job.rc",
        pid_path=f"{workspace}/job.pid",
    )
    driver.cloud.terminate_pod(handle.pod_id)
    deadline = time.monotonic() + 10
    while _group_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(pid)  # the job and its child, its whole process group
    assert not Path(driver.cloud.pod_dir(handle.pod_id)).exists()


def _group_alive(pgid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in {"Z", "X"} and int(fields[2]) == pgid:
            return True
    return False


def test_the_provider_bundle_shares_one_connection(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd()
    provider = SshProvider(
        target_for(server, ssh_client_key, pod="run-3"),
        known_hosts=tmp_path / "state" / "known_hosts",
        workspaces_root=str(tmp_path / "workspaces"),
    )
    try:
        handle = provider.cloud.create_pod(PodRequest("run-3", "i", "g", "LAB"))
        status = provider.cloud.get_pod(handle.pod_id)
        shell = provider.open_shell(status)
        assert shell.run("pwd", timeout=10).stdout.decode().strip() == status.workspace_root
        (tmp_path / "code").mkdir()
        (tmp_path / "code" / "main.py").write_bytes(b"print(1)\n")
        sync = provider.open_sync(status)
        assert sync.push(f"{tmp_path}/code/", f"{status.workspace_root}/code").files == 1
        provider.cloud.terminate_pod(handle.pod_id)
    finally:
        provider.close()
    assert provider.connection.connections_made == 1
    assert server.accepted_logins() == 2  # ours, and rsync's own ssh


def test_closing_a_pod_shell_leaves_the_providers_connection_to_the_lifecycle_action(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    """The run closes its pod shell before the lifecycle action, which runs on the same
    connection: the shell must not close what it shares; the provider closes it at the end."""
    server = start_sshd()
    provider = SshProvider(
        target_for(server, ssh_client_key, pod="run-4"),
        known_hosts=tmp_path / "state" / "known_hosts",
        workspaces_root=str(tmp_path / "workspaces"),
    )
    try:
        handle = provider.cloud.create_pod(PodRequest("run-4", "i", "g", "LAB"))
        shell = provider.open_shell(provider.cloud.get_pod(handle.pod_id))
        assert shell.run("true", timeout=10).exit_code == 0
        shell.close()
        provider.cloud.terminate_pod(handle.pod_id)
        assert not (tmp_path / "workspaces" / handle.pod_id).exists()
    finally:
        provider.close()
    assert provider.connection.connections_made == 1
    assert not provider.connection.alive


def test_home_relative_root_is_resolved_on_the_host(driver: Any) -> None:
    cloud = SshGpuCloud(driver.shell, workspaces_root="~/pegboard-contract-probe")
    assert cloud.root == os.path.expanduser("~/pegboard-contract-probe")
    assert cloud.list_pods() == []


def test_provision_is_one_command_with_the_record_on_its_stdin(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    # Claiming the workspace and writing pod.json were a command and ~10 SFTP requests on the
    # critical path of every run; one command now, the record renamed into place.
    server = start_sshd(record_commands=True)
    made = _Driver(server, ssh_client_key, tmp_path)
    try:
        made.shell.run("true", timeout=10)  # connected before counting
        before = len(server.recorded_commands())
        handle = made.cloud.create_pod(made.request("run-1"))
        claimed = server.recorded_commands()[before:]
        assert len(claimed) == 1 and "mkdir" in claimed[0], claimed  # no sftp-server either
        record = made.root / handle.pod_id / "pod.json"
        assert record.stat().st_mode & 0o777 == 0o644
        assert not (made.root / handle.pod_id / ".pod.json.tmp").exists()
        status = made.cloud.get_pod(handle.pod_id)
        assert (status.name, status.gpu_id, status.datacenter_id) == ("run-1", "A100", "LAB")
    finally:
        made.shell.close()


def test_the_status_read_after_a_create_answers_from_the_claims_record(
    start_sshd: StartSshd, ssh_client_key: SshClientKey, tmp_path: Path
) -> None:
    server = start_sshd(record_commands=True)
    made = _Driver(server, ssh_client_key, tmp_path)
    try:
        handle = made.cloud.create_pod(made.request("run-9"))
        after_claim = len(server.recorded_commands())
        status = made.cloud.get_pod(handle.pod_id)
        assert len(server.recorded_commands()) == after_claim  # no command, no SFTP session
        on_host = made.cloud._status(made.cloud._read(handle.pod_id))
        assert status == on_host
        made.cloud.terminate_pod(handle.pod_id)
        with pytest.raises(NotFound):  # afterwards the host answers, not the record
            made.cloud.get_pod(handle.pod_id)
    finally:
        made.shell.close()

"""GpuCloud contract against LocalGpuCloud (pods as directories)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from contract.gpu_cloud_contract import GpuCloudContract
from pegboard.adapters.providers.local.gpu_cloud import LocalGpuCloud
from pegboard.domain.errors import PortError
from pegboard.domain.ports.gpu_cloud import PodRequest


class _Driver:
    def __init__(self, root: Path) -> None:
        self.cloud = LocalGpuCloud(root)
        self.volume_name = "models"
        self.unknown_volume_name = None

    def request(self, name: str) -> PodRequest:
        return PodRequest(name=name, image="img:1", gpu_id="LOCAL", datacenter_id="HOST")

    def settle(self) -> None:
        time.sleep(0.01)


class TestLocalGpuCloudContract(GpuCloudContract):
    @pytest.fixture
    def driver(self, tmp_path: Path) -> Any:
        return _Driver(tmp_path / "pods")


def test_terminate_removes_the_pod_directory_and_stop_keeps_it(tmp_path: Path) -> None:
    cloud = LocalGpuCloud(tmp_path)
    kept = cloud.create_pod(PodRequest(name="a", image="i", gpu_id="g", datacenter_id="d"))
    gone = cloud.create_pod(PodRequest(name="b", image="i", gpu_id="g", datacenter_id="d"))
    cloud.stop_pod(kept.pod_id)
    cloud.terminate_pod(gone.pod_id)
    assert (tmp_path / kept.pod_id).is_dir()
    assert not (tmp_path / gone.pod_id).exists()
    status = cloud.get_pod(kept.pod_id)
    assert status.workspace_root == str(tmp_path / kept.pod_id / "fs" / "workspace")


def test_what_the_disk_refuses_is_a_port_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port raises PortErrors only: a pods root that cannot be listed or a pod record
    that cannot be written is never the disk's OSError (root ignores permissions, so the
    disk's refusal is injected)."""
    cloud = LocalGpuCloud(tmp_path)
    pod = cloud.create_pod(PodRequest(name="a", image="i", gpu_id="g", datacenter_id="d"))

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patch:
        patch.setattr("os.replace", refuse)
        with pytest.raises(PortError, match="cannot write"):
            cloud.stop_pod(pod.pod_id)
        with pytest.raises(PortError, match="cannot write"):
            cloud.resume_pod(pod.pod_id)
    assert not [p for p in (tmp_path / pod.pod_id).iterdir() if p.name.endswith(".tmp")]
    with monkeypatch.context() as patch:
        patch.setattr(Path, "iterdir", refuse)
        with pytest.raises(PortError, match="cannot list"):
            cloud.list_pods()

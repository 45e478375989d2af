"""LocalGpuCloud: the GpuCloud port with "pods" that are directories on this machine.

provider "local". Every requested GPU is reported in stock in every requested datacenter (this
machine stands in for whatever the config asks for), at price 0.0; a datacenter lists one GPU,
LOCAL-GPU (what `gpu-list` shows). A pod is ready as soon as it is created; its shell and file
sync are LocalShell and LocalFileSync on the same directory. A stopped pod records when it
stopped (`ls-stale` ages it from then).
Lifecycle actions: stop kills the pod's detached processes and keeps its directory (EXITED),
resume marks it RUNNING again, terminate kills them and removes the directory.
Network volumes are emulated simply: any name is a volume (id `local-volume-<name>`) that every
datacenter reaches (`datacenter_id` None), and a pod using it gets its own directory as usual.
See LocalPodPaths for the layout and the path mapping.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pegboard.adapters.local_pod_paths import LocalPodPaths
from pegboard.adapters.local_shell import kill_process_group
from pegboard.adapters.owned_machine_stock import OwnedMachineStock
from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    NetworkVolume,
    PodHandle,
    PodRequest,
    PodStatus,
)

logger = logging.getLogger(__name__)

LOCAL_PROVIDER = "local"
# What `datacenter_stock` lists: the GPU the examples name (any requested GPU is in stock too).
LOCAL_GPU_ID = "LOCAL-GPU"
LOCAL_VOLUME_PREFIX = "local-volume-"


class LocalGpuCloud(OwnedMachineStock):
    """Pods as directories under `pods_root`."""

    HOST_GPU_ID = LOCAL_GPU_ID

    def __init__(self, pods_root: Path, *, new_id: Callable[[], str] | None = None) -> None:
        self._root = Path(pods_root)
        self._new_id = new_id or (lambda: "local-" + secrets.token_hex(6))

    @property
    def provider(self) -> str:
        return LOCAL_PROVIDER

    @property
    def pods_root(self) -> Path:
        return self._root

    def paths(self, pod_id: str) -> LocalPodPaths:
        """The pod's directories (the container builds the pod's shell and file sync on them)."""
        meta = self._read(pod_id)
        return LocalPodPaths(self._root, pod_id, str(meta.get("volume_mount", "/workspace")))

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        name = id_or_name.removeprefix(LOCAL_VOLUME_PREFIX)
        return NetworkVolume(
            volume_id=LOCAL_VOLUME_PREFIX + name, name=name, datacenter_id=None, size_gb=None
        )

    def create_pod(self, request: PodRequest) -> PodHandle:
        pod_id = self._new_id()
        paths = LocalPodPaths(self._root, pod_id, request.volume_mount)
        if paths.pod_dir.exists():
            raise PortError(f"local pod directory already exists: {paths.pod_dir}")
        # Built under a hidden name and renamed into place: a process killed half-way leaves
        # no pod directory without its pod.json (list_pods could not see such a "pod").
        staging = LocalPodPaths(self._root, f".creating-{pod_id}", request.volume_mount)
        try:
            staging.workspace.mkdir(parents=True, exist_ok=False)
            self._write(
                staging,
                {
                    "pod_id": pod_id,
                    "name": request.name,
                    "desired_status": POD_RUNNING,
                    "gpu_id": request.gpu_id,
                    "gpu_count": request.gpu_count,
                    "datacenter_id": request.datacenter_id,
                    "image": request.image,
                    "volume_mount": request.volume_mount,
                    "volume_gb": request.volume_gb,
                    "created_at": time.time(),
                },
            )
            os.rename(staging.pod_dir, paths.pod_dir)
        except OSError as exc:
            shutil.rmtree(staging.pod_dir, ignore_errors=True)
            raise PortError(f"cannot create {paths.pod_dir}: {exc.strerror or exc}") from None
        return PodHandle(pod_id=pod_id, name=request.name)

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        return [pod for pod in self.list_pods() if pod.name == name]

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        if not self._root.is_dir():
            return []
        try:
            entries = sorted(self._root.iterdir())
        except OSError as exc:
            raise PortError(f"cannot list {self._root}: {exc.strerror or exc}") from None
        found = []
        for entry in entries:
            if entry.name.startswith("."):
                continue  # a pod being created (see create_pod)
            try:
                pod = self.get_pod(entry.name)
            except NotFound:
                continue  # not a pod directory (or removed meanwhile)
            if status is None or pod.desired_status == status:
                found.append(pod)
        return found

    def get_pod(self, pod_id: str) -> PodStatus:
        meta = self._read(pod_id)
        paths = LocalPodPaths(self._root, pod_id, str(meta.get("volume_mount", "/workspace")))
        running = meta.get("desired_status") == POD_RUNNING
        return PodStatus(
            pod_id=pod_id,
            name=str(meta.get("name", "")),
            desired_status=str(meta.get("desired_status", POD_EXITED)),
            gpu_id=meta.get("gpu_id"),
            datacenter_id=meta.get("datacenter_id"),
            image=meta.get("image"),
            access=paths if running else None,  # its shell and sync work on these directories
            cost_per_hour_usd=0.0,
            workspace_root=str(paths.workspace),
            volume_gb=meta.get("volume_gb"),
            stopped_at=meta.get("stopped_at") if not running else None,
            created_at=meta.get("created_at"),
        )

    def stop_pod(self, pod_id: str) -> None:
        meta = self._read(pod_id)
        paths = LocalPodPaths(self._root, pod_id, str(meta.get("volume_mount", "/workspace")))
        _kill_pod_processes(paths)
        if meta.get("desired_status") != POD_EXITED:
            meta["stopped_at"] = time.time()  # stopping a stopped pod keeps its age
        meta["desired_status"] = POD_EXITED
        self._write(paths, meta)

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        meta = self._read(pod_id)
        paths = LocalPodPaths(self._root, pod_id, str(meta.get("volume_mount", "/workspace")))
        meta["desired_status"] = POD_RUNNING
        meta.pop("stopped_at", None)
        self._write(paths, meta)

    def terminate_pod(self, pod_id: str) -> None:
        paths = LocalPodPaths(self._root, pod_id)
        if not paths.pod_dir.exists():
            return
        _kill_pod_processes(paths)
        # Renamed away first, so a concurrent reader sees the whole pod or none of it, never a
        # half-removed directory that still has its pod.json.
        doomed = paths.pod_dir.with_name(f".deleting-{pod_id}-{secrets.token_hex(4)}")
        try:
            os.rename(paths.pod_dir, doomed)
        except OSError as exc:
            raise PortError(f"cannot remove {paths.pod_dir}: {exc.strerror or exc}") from None
        try:
            shutil.rmtree(doomed)
        except OSError as exc:
            # Put what is left back under its name, so it stays listed and releasable.
            with contextlib.suppress(OSError):
                os.rename(doomed, paths.pod_dir)
            raise PortError(f"cannot remove {paths.pod_dir}: {exc.strerror or exc}") from None

    def _read(self, pod_id: str) -> dict[str, Any]:
        if not pod_id or "/" in pod_id or pod_id in {".", ".."}:
            raise NotFound(f"no local pod {pod_id!r}")
        path = LocalPodPaths(self._root, pod_id).meta_file
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise NotFound(f"no local pod {pod_id!r} under {self._root}") from None
        except (OSError, ValueError) as exc:
            raise PortError(f"unreadable local pod record {path}: {exc}") from None
        if not isinstance(data, dict):
            raise PortError(f"unreadable local pod record {path}")
        return data

    def _write(self, paths: LocalPodPaths, meta: dict[str, Any]) -> None:
        # A temp name of its own: two processes updating one pod never share a half file.
        tmp = paths.meta_file.with_name(f".pod.json.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            tmp.write_text(json.dumps(meta, indent=2) + "\n")
            os.replace(tmp, paths.meta_file)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise PortError(f"cannot write {paths.meta_file}: {exc.strerror or exc}") from None


def _kill_pod_processes(paths: LocalPodPaths) -> None:
    if not paths.procs_dir.is_dir():
        return
    try:
        for entry in paths.procs_dir.iterdir():
            if entry.name.isdigit():
                kill_process_group(int(entry.name))
            entry.unlink(missing_ok=True)
    except OSError as exc:
        raise PortError(
            f"cannot stop the processes of {paths.pod_dir}: {exc.strerror or exc}"
        ) from None

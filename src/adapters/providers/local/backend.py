"""The local provider's ports: LocalGpuCloud, LocalShell and LocalFileSync on one pods root."""

from __future__ import annotations

from pathlib import Path

from pegboard.adapters.local_file_sync import LocalFileSync
from pegboard.adapters.local_pod_paths import DEFAULT_PODS_ROOT_ENV, default_pods_root
from pegboard.adapters.local_shell import LocalShell
from pegboard.adapters.providers.local.gpu_cloud import LocalGpuCloud
from pegboard.domain.gpujob.provider_plugin import BuildContext
from pegboard.domain.ports.backend import Backend
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .locator import LocalLocator


def pods_root(context: BuildContext) -> Path:
    """$PEGBOARD_LOCAL_PODS_ROOT, else $XDG_DATA_HOME/pegboard/local-pods (the data directory
    the composition root resolved by the one XDG rule both tools use)."""
    if context.environ.get(DEFAULT_PODS_ROOT_ENV):
        return default_pods_root(dict(context.environ))
    return context.data_dir / "pegboard" / "local-pods"


def local_backend(context: BuildContext, locator: LocalLocator) -> Backend:
    """Pods under the recorded pods root, else this process's."""
    root = Path(locator.pods_root) if locator.pods_root else pods_root(context)
    local = LocalGpuCloud(root)

    def open_shell(status: PodStatus) -> RemoteShell:
        return LocalShell(local.paths(status.pod_id))

    def open_sync(status: PodStatus) -> FileSync:
        return LocalFileSync(local.paths(status.pod_id))

    return Backend(
        cloud=local,
        open_shell=open_shell,
        open_sync=open_sync,
        locator=LocalLocator(pods_root=str(local.pods_root)),
    )

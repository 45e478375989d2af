"""Where a local "pod" lives on this machine, and how its absolute paths map into it.

A local pod is a directory `<pods_root>/<pod_id>/`:
  pod.json   what GpuCloud reports (name, status, GPU, image, volume_mount)
  procs/     one file per detached process group started in the pod (stop/terminate kill them)
  fs/        the pod's filesystem root: the pod path /workspace/x is fs/workspace/x

So remote absolute paths never escape into this machine's real root. A path that is already
inside fs/ (a rendered `{volume_mount}`, which the local provider resolves to fs/<volume_mount>)
is used as is.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

DEFAULT_PODS_ROOT_ENV = "PEGBOARD_LOCAL_PODS_ROOT"


def default_pods_root(environ: dict[str, str] | None = None) -> Path:
    """$PEGBOARD_LOCAL_PODS_ROOT, else $XDG_DATA_HOME/pegboard/local-pods (~/.local/share/...)."""
    env = os.environ if environ is None else environ
    if env.get(DEFAULT_PODS_ROOT_ENV):
        return Path(env[DEFAULT_PODS_ROOT_ENV]).expanduser()
    data_home = env.get("XDG_DATA_HOME") or str(Path("~/.local/share").expanduser())
    return Path(data_home) / "pegboard" / "local-pods"


@attrs.frozen
class LocalPodPaths:
    """The directories of one local pod."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pods_root: Path
    pod_id: str
    volume_mount: str = "/workspace"

    @property
    def pod_dir(self) -> Path:
        return self.pods_root / self.pod_id

    @property
    def meta_file(self) -> Path:
        return self.pod_dir / "pod.json"

    @property
    def procs_dir(self) -> Path:
        return self.pod_dir / "procs"

    @property
    def fs_root(self) -> Path:
        return self.pod_dir / "fs"

    @property
    def workspace(self) -> Path:
        return self.fs_root / self.volume_mount.lstrip("/")

    def make_dirs(self, path: Path) -> None:
        """Create `path` and its missing parents inside the pod's directory, never that directory
        itself: once the pod is deleted (terminate, cleanup, `rm -rf` by hand), even between a
        check that it exists and this call, FileNotFoundError, and nothing comes back."""
        if path == self.pod_dir and path.is_dir():
            return
        if self.pod_dir not in path.parents:  # the pod itself, gone; or a path outside it
            raise FileNotFoundError(f"{path} is not inside the pod's directory {self.pod_dir}")
        try:
            path.mkdir(exist_ok=True)  # the common case: its parent is there, one call
        except FileNotFoundError:
            self.make_dirs(path.parent)
            path.mkdir(exist_ok=True)

    def to_host(self, pod_path: str) -> str:
        """This machine's path for a pod path; a trailing "/" is kept (rsync cares)."""
        trailing = "/" if pod_path.endswith("/") and pod_path != "/" else ""
        root = str(self.fs_root)
        if pod_path == root or pod_path.startswith(root + "/"):
            return pod_path
        if pod_path.startswith("/"):
            host = os.path.normpath(root + "/" + pod_path.lstrip("/"))
        else:
            host = os.path.normpath(str(self.workspace / pod_path))
        if host != root and not host.startswith(root + "/"):
            raise ValueError(f"pod path {pod_path!r} escapes the pod's filesystem")
        return host + trailing

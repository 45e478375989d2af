"""A container's filesystem: where its volumes live on the host, and the plan that mounts them
at their mountPaths in a private mount namespace (mount_helper.py carries it out).

- emptyDir (and kinds the sandbox has no content for: configMap, secret, projected,
  downwardAPI): a directory of the pod's scratch, shared by its containers, gone with the pod.
- persistentVolumeClaim: the claim's directory under the sandbox's `claims/`, kept across
  pods until the PersistentVolumeClaim is deleted (claims.py).
- hostPath: the host path itself.

Isolation needs root, util-linux's `unshare` and `nsenter`, and a kernel that lets us make a
mount namespace; without them containers run on the host's filesystem as before (a volume's
mountPath is then the host's path) and `isolation_unavailable()` says why.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

HELPER = str(Path(__file__).with_name("mount_helper.py"))
_checked: list[str | None] = []


def isolation_unavailable() -> str | None:
    """None when containers can get their own mounts here, else why not (checked once)."""
    if not _checked:
        _checked.append(_probe())
    return _checked[0]


def _probe() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "mount namespaces need root (the sandbox runs as an unprivileged user)"
    unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
    if not unshare or not nsenter:
        return "util-linux's unshare and nsenter are not installed"
    try:
        done = subprocess.run(
            [unshare, "--mount", "--propagation", "private", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare --mount failed: {exc}"
    if done.returncode != 0:
        return f"unshare --mount failed: {done.stderr.decode(errors='replace').strip()}"
    return None


def volume_sources(
    pod: Mapping[str, Any], scratch: Path, claim_directory: Callable[[str, str], Path]
) -> dict[str, tuple[Path, bool]]:
    """Volume name -> (host directory, read-only by the volume's own setting)."""
    sources: dict[str, tuple[Path, bool]] = {}
    namespace = pod["metadata"]["namespace"]
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        name = str(volume.get("name") or "")
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"] or {}
            directory = claim_directory(namespace, str(claim.get("claimName") or ""))
            sources[name] = (directory, bool(claim.get("readOnly")))
        elif "hostPath" in volume:
            sources[name] = (Path(str((volume["hostPath"] or {}).get("path") or "/")), False)
        else:
            sources[name] = (scratch / "volumes" / name, False)
    return sources


def _normal(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/"))


def _ancestors(path: str) -> list[str]:
    parts = []
    while (path := posixpath.dirname(path)) != "/":
        parts.append(path)
    return parts


def mount_plan(
    container: Mapping[str, Any],
    sources: Mapping[str, tuple[Path, bool]],
    *,
    root: Path,
    default_workdir: str,
) -> dict[str, Any] | None:
    """What mount_helper's `start` needs, or None when the container mounts nothing."""
    mounts: list[dict[str, Any]] = []
    for mount in container.get("volumeMounts") or ():
        source = sources.get(str(mount.get("name")))
        if source is None:
            continue
        directory, read_only = source
        sub = str(mount.get("subPath") or "")
        mounts.append(
            {
                "path": _normal(str(mount.get("mountPath") or "/")),
                "source": str(directory / sub) if sub else str(directory),
                "readOnly": bool(mount.get("readOnly")) or read_only,
            }
        )
    if not mounts:
        return None
    mounts.sort(key=lambda m: str(m["path"]).count("/"))
    targets = [str(m["path"]) for m in mounts]

    def under_target(path: str) -> bool:
        return any(path == t or path.startswith(t.rstrip("/") + "/") for t in targets)

    expanded = {a for t in targets for a in _ancestors(t) if not under_target(a)}
    workdir = _normal(str(container.get("workingDir") or default_workdir))
    if not under_target(workdir) and not os.path.isdir(workdir):
        expanded |= {workdir, *(a for a in _ancestors(workdir) if not under_target(a))}
    return {
        "root": str(root),
        "mounts": mounts,
        "expanded": sorted(expanded),
        "workdir": workdir,
    }


def start_argv(plan: Mapping[str, Any], argv: list[str]) -> list[str]:
    """The container's process in a mount namespace of its own, set up by the helper."""
    import json

    unshare = shutil.which("unshare") or "unshare"
    return [
        unshare, "--mount", "--propagation", "private", "--",
        sys.executable, "-I", "-S", HELPER, "start", json.dumps(plan), "--", *argv,
    ]  # fmt: skip


def exec_argv(pid: int, root: str, workdir: str, argv: list[str]) -> list[str]:
    """A command joining the container's mount namespace, root and working directory."""
    nsenter = shutil.which("nsenter") or "nsenter"
    return [
        nsenter, "--target", str(pid), "--mount", "--",
        sys.executable, "-I", "-S", HELPER, "exec", f"{root}:{workdir}", "--", *argv,
    ]  # fmt: skip

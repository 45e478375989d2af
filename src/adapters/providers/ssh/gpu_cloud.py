"""SshGpuCloud: the GpuCloud port for a machine you already have (provider `ssh`).

There is nothing to rent: "provisioning" claims a fresh directory on the host, unique per run,
under `workspaces_root` (`mkdir` of a new random id, which fails rather than reuse one), and
records the pod in it:

    <workspaces_root>/<pod_id>/pod.json     name, status, when it stopped, what was asked
    <workspaces_root>/<pod_id>/workspace/   the run's {volume_mount} (PodStatus.workspace_root)
    <workspaces_root>/<pod_id>/procs/<pid>  detached jobs started through `shell_for`

Lifecycle on a machine that is not rented (no billing, cost 0.0):
- stop: kill the run's detached jobs (their process groups), keep the workspace, EXITED;
- preserve: nothing happens (the app simply leaves the pod as it is);
- resume (recycle): mark it RUNNING again; the kept workspace is reused as is;
- terminate (delete): kill the jobs and remove the pod's directory.
Network volumes do not exist on your own machine: every name resolves (no datacenter), and
the run still works in its per-run workspace.
Every call runs on the run's one SSH connection (the shell handed in).
"""

from __future__ import annotations

import builtins
import json
import posixpath
import re
import secrets
import shlex
import time
from collections.abc import Callable
from typing import Any

from pegboard.adapters.owned_machine_stock import OwnedMachineStock
from pegboard.adapters.ssh_endpoint import SshEndpoint
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.gpujob.remote_commands import kill_groups_function
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    NetworkVolume,
    PodHandle,
    PodRequest,
    PodStatus,
)

SSH_PROVIDER = "ssh"
SSH_HOST_GPU_ID = "SSH-HOST"  # what `datacenter_stock` lists (any requested GPU is in stock)
SSH_VOLUME_PREFIX = "ssh-volume-"
_POD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TIMEOUT_SEC = 60.0
_RECORD_SEPARATOR = "\x1e"


class SshGpuCloud(OwnedMachineStock):
    """Pods as directories on one SSH host, managed over the run's connection."""

    HOST_GPU_ID = SSH_HOST_GPU_ID

    def __init__(
        self,
        shell: SshShell,
        *,
        workspaces_root: str,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        if not (workspaces_root.startswith(("/", "~/")) or workspaces_root == "~"):
            raise PortError(
                f"ssh workspaces root must be absolute or start with ~/: {workspaces_root!r}"
            )
        if workspaces_root.rstrip("/") == "":
            raise PortError("ssh workspaces root must not be /")
        self._shell = shell
        self._root_setting = workspaces_root
        self._root: str | None = None
        self._new_id = new_id or (lambda: "ssh-" + secrets.token_hex(6))
        # The record create_pod has just written (and seen written), for the status read that
        # follows a create: the first get_pod of that pod answers from it, with no round trip.
        self._just_created: dict[str, Any] | None = None

    @property
    def provider(self) -> str:
        return SSH_PROVIDER

    @property
    def root(self) -> str:
        """workspaces_root with ~ resolved on the host (one command, the first time)."""
        if self._root is None:
            setting = self._root_setting
            if setting == "~" or setting.startswith("~/"):
                result = self._shell.run('printf "%s" "$HOME"', timeout=_TIMEOUT_SEC)
                home = result.stdout.decode().strip()
                if result.exit_code != 0 or not home.startswith("/"):
                    raise PortError(f"cannot find the home directory on {self._endpoint_text}")
                setting = home.rstrip("/") + setting[1:]
            self._root = setting.rstrip("/")
        return self._root

    def pod_dir(self, pod_id: str) -> str:
        if not _POD_ID.match(pod_id) or pod_id in {".", ".."}:
            raise NotFound(f"no ssh pod {pod_id!r}")
        return posixpath.join(self.root, pod_id)

    def workspace(self, pod_id: str) -> str:
        return posixpath.join(self.pod_dir(pod_id), "workspace")

    def shell_for(self, pod_id: str) -> SshShell:
        """A shell on the same connection that starts in the pod's workspace and records jobs;
        closing it leaves the connection open (the cloud still needs it; its owner closes it)."""
        return SshShell(
            self._shell.connection,
            cwd=self.workspace(pod_id),
            procs_dir=posixpath.join(self.pod_dir(pod_id), "procs"),
            owns_connection=False,
        )

    # --- stock and prices come from OwnedMachineStock; volumes: --------------------------

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        """Every name is a "volume" reachable from every datacenter, as for `local`: the host
        has its own disks, and the run still works in its per-run workspace."""
        name = id_or_name.removeprefix(SSH_VOLUME_PREFIX)
        return NetworkVolume(volume_id=SSH_VOLUME_PREFIX + name, name=name, datacenter_id=None)

    # --- pods ----------------------------------------------------------------------------

    def create_pod(self, request: PodRequest) -> PodHandle:
        pod_id = self._new_id()
        pod_dir = self.pod_dir(pod_id)
        q = shlex.quote
        meta: dict[str, Any] = {
            "pod_id": pod_id,
            "name": request.name,
            "desired_status": POD_RUNNING,
            "gpu_id": request.gpu_id,
            "gpu_count": request.gpu_count,
            "datacenter_id": request.datacenter_id,
            "image": request.image,
            "volume_gb": request.volume_gb,
            "created_at": time.time(),
        }
        record = _record_bytes(meta)
        staged, final = q(pod_dir + "/.pod.json.tmp"), q(pod_dir + "/pod.json")
        # The last mkdir has no -p: an existing directory is never claimed twice. The record
        # comes on stdin in the same command (one round trip instead of a command and ~10 SFTP
        # requests), written by bash's own read and printf (no cat, no subshell: each process
        # costs the host a few ms); renamed into place, so a reader never sees half of it.
        command = (
            f"if [ ! -d {q(self.root)} ]; then mkdir -p {q(self.root)}; fi && mkdir {q(pod_dir)} && "
            f"mkdir {q(pod_dir + '/workspace')} {q(pod_dir + '/procs')} && umask 022 && "
            f"{{ IFS= read -r -d '' record; printf '%s' \"$record\" > {staged}; }} && "
            f"mv -f {staged} {final}"
        )
        result = self._shell.run(command, timeout=_TIMEOUT_SEC, stdin=record)
        if result.exit_code != 0:
            raise PortError(
                f"cannot claim {pod_dir} on {self._endpoint_text}: {_tail(result.stderr)}"
            )
        self._just_created = json.loads(record)  # exactly what the host holds now
        return PodHandle(pod_id=pod_id, name=request.name)

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        return [pod for pod in self.list_pods() if pod.name == name]

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        # One command for all records (no round trip per pod).
        command = (
            f"cd {shlex.quote(self.root)} 2>/dev/null || exit 0; "
            f'for f in */pod.json; do [ -f "$f" ] && cat "$f" && printf \'{_RECORD_SEPARATOR}\'; '
            "done; exit 0"
        )
        result = self._shell.run(command, timeout=_TIMEOUT_SEC)
        pods = []
        for record in result.stdout.decode(errors="replace").split(_RECORD_SEPARATOR):
            if not record.strip():
                continue
            try:
                meta = json.loads(record)
            except ValueError:
                continue  # a record being rewritten right now, or not ours
            if isinstance(meta, dict) and isinstance(meta.get("pod_id"), str):
                pod = self._status(meta)
                if status is None or pod.desired_status == status:
                    pods.append(pod)
        return sorted(pods, key=lambda pod: pod.pod_id)

    def get_pod(self, pod_id: str) -> PodStatus:
        created, self._just_created = self._just_created, None
        if created is not None and created["pod_id"] == pod_id:
            return self._status(created)
        return self._status(self._read(pod_id))

    def stop_pod(self, pod_id: str) -> None:
        self._just_created = None
        meta = self._read(pod_id)
        self._kill_jobs(pod_id)
        if meta.get("desired_status") != POD_EXITED:
            meta["stopped_at"] = time.time()  # stopping a stopped pod keeps its age
        meta["desired_status"] = POD_EXITED
        self._write(pod_id, meta)

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        self._just_created = None
        meta = self._read(pod_id)
        meta["desired_status"] = POD_RUNNING
        meta.pop("stopped_at", None)
        self._write(pod_id, meta)

    def terminate_pod(self, pod_id: str) -> None:
        self._just_created = None
        try:
            pod_dir = self.pod_dir(pod_id)
        except NotFound:
            return
        # One command (one round trip): kill the jobs, then remove what they ran in (their
        # records with it: no rm of each, and no subshell: each process costs the host ms).
        procs = shlex.quote(posixpath.join(pod_dir, "procs"))
        command = (
            f"{kill_groups_function(grace=2.0)}pids=; if cd {procs} 2>/dev/null; then "
            f'for p in *; do case "$p" in *[!0-9]*|"") continue;; esac; pids="$pids $p"; '
            f"done; cd /; fi; kill_groups $pids; rm -rf -- {shlex.quote(pod_dir)}"
        )
        result = self._shell.run(command, timeout=_TIMEOUT_SEC)
        if result.exit_code != 0:
            raise PortError(f"cannot remove {pod_dir}: {_tail(result.stderr)}")

    # --- internals -----------------------------------------------------------------------

    @property
    def _endpoint_text(self) -> str:
        return str(self._shell.connection.target)

    def _kill_jobs(self, pod_id: str) -> None:
        self._shell.run(self._kill_jobs_command(pod_id), timeout=_TIMEOUT_SEC)

    def _kill_jobs_command(self, pod_id: str) -> str:
        """SIGTERM, then SIGKILL, every recorded job's process group; forget them (a subshell,
        so a command may follow it)."""
        procs = shlex.quote(posixpath.join(self.pod_dir(pod_id), "procs"))
        return (
            f"({kill_groups_function(grace=2.0)}cd {procs} 2>/dev/null || exit 0; pids=; "
            'for p in *; do case "$p" in *[!0-9]*|"") continue;; esac; pids="$pids $p"; '
            'rm -f "$p"; done; kill_groups $pids)'
        )

    def _read(self, pod_id: str) -> dict[str, Any]:
        path = posixpath.join(self.pod_dir(pod_id), "pod.json")
        try:
            data = json.loads(self._shell.read_file(path))
        except NotFound:
            raise NotFound(f"no ssh pod {pod_id!r} under {self.root}") from None
        except ValueError as exc:
            raise PortError(f"unreadable pod record {path}: {exc}") from None
        if not isinstance(data, dict):
            raise PortError(f"unreadable pod record {path}")
        return data

    def _write(self, pod_id: str, meta: dict[str, Any]) -> None:
        path = posixpath.join(self.pod_dir(pod_id), "pod.json")
        self._shell.write_file(path, _record_bytes(meta), mode=0o644)

    def _status(self, meta: dict[str, Any]) -> PodStatus:
        pod_id = str(meta["pod_id"])
        running = meta.get("desired_status") == POD_RUNNING
        target = self._shell.connection.target
        return PodStatus(
            pod_id=pod_id,
            name=str(meta.get("name", "")),
            desired_status=str(meta.get("desired_status", POD_EXITED)),
            gpu_id=meta.get("gpu_id"),
            datacenter_id=meta.get("datacenter_id"),
            image=meta.get("image"),
            access=SshEndpoint(host=target.host, port=target.port, user=target.user)
            if running
            else None,
            cost_per_hour_usd=0.0,
            workspace_root=self.workspace(pod_id),
            volume_gb=meta.get("volume_gb"),
            stopped_at=meta.get("stopped_at") if not running else None,
        )


def _record_bytes(meta: dict[str, Any]) -> bytes:
    return (json.dumps(meta, indent=2) + "\n").encode()


def _tail(data: bytes) -> str:
    return data.decode(errors="replace").strip()[-300:]

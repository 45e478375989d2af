"""A sandbox pod's SSH endpoint: a real sshd on 127.0.0.1 (LoopbackSshd) per running pod.

Every session runs through a ForceCommand wrapper that
- logs the requested command (LoopbackSshd's `recorded_commands()`),
- marks the session's processes with PEGBOARD_SANDBOX_POD=<marker> in their environment, so
  stopping or terminating the pod kills whatever its sessions left running (detached jobs too),
  as stopping a real pod's container does;
- as root (CI), enters a private mount namespace (`unshare --mount`) and bind-mounts the pod's
  volume directory onto its volumeMountPath, so each pod sees its own /workspace at the absolute
  path its config names, and unchanged RunPod configs run. The mount point is created on this
  machine if missing (an empty directory); nothing outside the session sees the bind mount.
  Not root: no namespace, the pod's commands see this machine's filesystem as it is
  (`namespaced` is False, and tests that need /workspace skip).
The pod trusts the sandbox's configured public keys plus the PUBLIC_KEY its create passed (what
RunPod's /start.sh writes into authorized_keys).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

from pegboard.adapters.sandboxes.sshd import LoopbackSshd

from .pods import SandboxPod

MARKER_VARIABLE = "PEGBOARD_SANDBOX_POD"

_WRAPPER = """#!/bin/sh
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> {log}
export {marker_var}={marker}
if [ -z "$SSH_ORIGINAL_COMMAND" ]; then SSH_ORIGINAL_COMMAND='exec /bin/sh -l'; export SSH_ORIGINAL_COMMAND; fi
{enter}exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""
# Runs in the new mount namespace: mount the pod's volume, then the requested command.
_ENTER = (
    "exec unshare --mount --propagation private /bin/sh -c "
    '\'mkdir -p "$1" && mount --bind "$2" "$1" && exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\' '
    "pod-session {mount} {volume}\n"
)


def can_namespace() -> bool:
    """Per-session mount namespaces need root and util-linux `unshare`."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


class PodSshd(LoopbackSshd):
    """LoopbackSshd whose ForceCommand wrapper is the pod session wrapper above."""

    def __init__(self, pod: SandboxPod, keys: list[str], marker: str, namespaced: bool) -> None:
        super().__init__(keys, record_commands=True)
        self.marker = marker
        enter = (
            _ENTER.format(
                mount=shlex.quote(pod.volume_mount), volume=shlex.quote(str(pod.volume_dir))
            )
            if namespaced
            else ""
        )
        self._pod_wrapper = _WRAPPER.format(
            log=shlex.quote(str(self.commands_log_path)),
            marker_var=MARKER_VARIABLE,
            marker=marker,
            enter=enter,
        )

    def _write_config(self) -> None:
        super()._write_config()  # record_commands=True: ForceCommand <workdir>/record-command
        wrapper = self.workdir / "record-command"
        wrapper.write_text(self._pod_wrapper)
        wrapper.chmod(0o755)


class SshdHosting:
    """PodHosting with a real sshd per running pod."""

    def __init__(self, workdir: Path, *, trusted_keys: Callable[[], list[str]]) -> None:
        self._trusted_keys = trusted_keys
        self._token = secrets.token_hex(4)
        self.namespaced = can_namespace()
        self._servers: dict[str, PodSshd] = {}
        self._markers: dict[str, str] = {}

    def start(self, pod: SandboxPod) -> int:
        self.stop(pod)
        keys = list(self._trusted_keys()) if pod.trust_account_keys else []
        if pod.public_key:
            keys.append(pod.public_key)
        marker = f"{self._token}-{pod.id}"
        server = PodSshd(pod, keys, marker, self.namespaced)
        server.start()
        self._servers[pod.id] = server
        self._markers[pod.id] = marker
        return server.port

    def stop(self, pod: SandboxPod) -> None:
        server = self._servers.pop(pod.id, None)
        marker = self._markers.pop(pod.id, f"{self._token}-{pod.id}")
        if server is not None:
            server.cleanup()
        kill_marked_processes(marker)

    def server(self, pod_id: str) -> LoopbackSshd | None:
        return self._servers.get(pod_id)

    def close(self) -> None:
        for pod_id in list(self._servers):
            server = self._servers.pop(pod_id)
            server.cleanup()
            kill_marked_processes(self._markers.pop(pod_id))


def kill_marked_processes(marker: str) -> int:
    """SIGKILL every process whose environment carries this pod's marker (twice: forks race)."""
    needle = f"{MARKER_VARIABLE}={marker}".encode() + b"\0"
    killed = 0
    for _ in range(2):
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ or environ.endswith(needle[:-1]):
                try:
                    os.kill(int(entry), signal.SIGKILL)
                    killed += 1
                except (ProcessLookupError, PermissionError):
                    pass
    return killed

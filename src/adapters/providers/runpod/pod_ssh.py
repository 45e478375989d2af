"""RunPodPodSsh: the SSH transport of a rented pod (RunPod), on the ssh provider's adapters.

A RunPod pod is reached where it publishes its 22/tcp (PodStatus.access, an SshEndpoint), as root, with the
user's key: the same SshConnection, SshShell, RsyncFileSync and SFTP fallback the `ssh`
provider uses (issue 9), nothing of its own. One connection per pod endpoint, shared by the
pod's shell, its file sync and the run's probes; the host key is pinned on first contact in
the pod's pin file and refused if it changes (RunPod reuses ip:port pairs across pods, so the
user's ~/.ssh/known_hosts is never consulted). A resumed pod publishes a new endpoint: a new
connection, learned afresh.

`authorized_key(...)` is the public key a pod is created with (its PUBLIC_KEY, which RunPod's
images append to root's authorized_keys): `<ssh.key_path>.pub`, else derived from the private
key, else the agent's keys.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from pegboard.adapters.rsync_file_sync import RsyncFileSync
from pegboard.adapters.sftp_file_sync import SftpFileSync
from pegboard.adapters.ssh_connection import SshConnection, SshTarget
from pegboard.adapters.ssh_endpoint import ssh_endpoint_of
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.ports.gpu_cloud import PodStatus


class RunPodPodSsh:
    """Shells and file syncs of RunPod pods, one SSH connection per published endpoint.

    pin_file: pod id -> the known_hosts file its host key is pinned in (a run's own file, or
    one per pod for the commands that reach a pod without a run's pointer).
    """

    def __init__(
        self,
        *,
        key_path: str | None,
        use_agent: bool,
        pin_file: Callable[[str], Path],
        connect_timeout: float = 10.0,
        progress: BinaryIO | None = None,
    ) -> None:
        self.key_path = key_path
        self.use_agent = use_agent
        self.pin_file = pin_file
        self.connect_timeout = connect_timeout
        self._progress = progress
        self._lock = threading.Lock()
        self._connections: dict[tuple[str, str, int], SshConnection] = {}

    def open_shell(self, status: PodStatus) -> SshShell:
        """The pod's shell; closing it leaves the connection to the file sync and the next probe."""
        return SshShell(self._connection(status), owns_connection=False)

    def open_sync(self, status: PodStatus) -> RsyncFileSync:
        """rsync for trees and big files; a single small file (the job log) rides the pod's
        open connection over SFTP, as on the ssh provider (no second SSH handshake, ~0.4 s)."""
        connection = self._connection(status)
        sftp = SftpFileSync(connection)
        return RsyncFileSync(
            connection.target,
            known_hosts=connection.pins.path,
            connect_timeout=self.connect_timeout,
            progress=self._progress,
            fallback=sftp,
            small_pulls=sftp,
        )

    def close(self) -> None:
        """Close every connection (the pods' detached jobs keep running)."""
        with self._lock:
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            connection.close()

    def _connection(self, status: PodStatus) -> SshConnection:
        endpoint = ssh_endpoint_of(status)
        key = (status.pod_id, endpoint.host, endpoint.port)
        with self._lock:
            connection = self._connections.get(key)
            if connection is None:
                target = SshTarget(
                    host=endpoint.host,
                    port=endpoint.port,
                    user=endpoint.user,
                    key_path=self.key_path,
                    use_agent=self.use_agent,
                    pod=status.pod_id,
                )
                connection = SshConnection(
                    target,
                    pins=PinnedHostKeys(self.pin_file(status.pod_id), pod=status.pod_id),
                    connect_timeout=self.connect_timeout,
                )
                self._connections[key] = connection
            return connection


def authorized_key(key_path: str | None, *, use_agent: bool) -> str | None:
    """The public key line(s) a new pod should trust (None: none found; the pod then trusts
    only what the account's RunPod settings add)."""
    if key_path:
        private = Path(key_path).expanduser()
        try:
            line = Path(str(private) + ".pub").read_text().strip()
        except OSError:
            line = ""
        if line:
            return line
        derived = _public_line_of(private)
        if derived:
            return derived
    if use_agent:
        from paramiko.agent import Agent

        lines = [f"{k.get_name()} {k.get_base64()}" for k in Agent().get_keys()]
        if lines:
            return "\n".join(lines)
    return None


def _public_line_of(private: Path) -> str | None:
    from paramiko.pkey import PKey

    try:
        key = PKey.from_path(private)
    except Exception:  # missing, encrypted or unreadable: connecting says so, in one line
        return None
    return f"{key.get_name()} {key.get_base64()}"

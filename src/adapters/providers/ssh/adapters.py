"""SshProvider: the `ssh` provider's adapters for one run, built around its one connection.

The composition root (app) builds one of these per run from `pod.provider: ssh` and `ssh.*`:
`cloud` provisions and tears down the run's workspace, `open_shell` and `open_sync` give the
pod's RemoteShell and FileSync once it is ready. All of them share one SshConnection; rsync
runs its own ssh with the same key and the pinned host key for trees and big files, and SFTP
on the shared connection carries single small pulls and everything when the host has no rsync.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from pegboard.adapters.providers.ssh.gpu_cloud import SshGpuCloud
from pegboard.adapters.rsync_file_sync import RsyncFileSync
from pegboard.adapters.sftp_file_sync import SftpFileSync
from pegboard.adapters.ssh_connection import DEFAULT_BACKOFF, Backoff, SshConnection, SshTarget
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.adapters.ssh_shell import SshShell
from pegboard.domain.ports.gpu_cloud import PodStatus


class SshProvider:
    """One run's `ssh` provider: GpuCloud, RemoteShell and FileSync on one connection.

    known_hosts: the pinned host key file beside the run's state (created on first contact).
    """

    def __init__(
        self,
        target: SshTarget,
        *,
        known_hosts: str | Path,
        workspaces_root: str,
        connect_timeout: float = 10.0,
        backoff: Backoff = DEFAULT_BACKOFF,
        progress: BinaryIO | None = None,
    ) -> None:
        self.target = target
        self.known_hosts = Path(known_hosts)
        self.connection = SshConnection(
            target,
            pins=PinnedHostKeys(self.known_hosts, pod=target.pod or target.host),
            connect_timeout=connect_timeout,
            backoff=backoff,
        )
        self.cloud = SshGpuCloud(SshShell(self.connection), workspaces_root=workspaces_root)
        self._connect_timeout = connect_timeout
        self._progress = progress

    def open_shell(self, status: PodStatus) -> SshShell:
        """The pod's shell: starts in its workspace, records its detached jobs."""
        return self.cloud.shell_for(status.pod_id)

    def open_sync(self, status: PodStatus) -> RsyncFileSync:
        """rsync for trees and big files; a single small file (the job log) rides the run's
        own connection over SFTP, and so does everything on a host without rsync."""
        sftp = SftpFileSync(self.connection)
        return RsyncFileSync(
            self.target,
            known_hosts=self.known_hosts,
            connect_timeout=self._connect_timeout,
            progress=self._progress,
            fallback=sftp,
            small_pulls=sftp,
        )

    def close(self) -> None:
        """Close the connection; the run's detached job keeps running."""
        self.connection.close()

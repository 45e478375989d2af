"""RsyncFileSync: the FileSync port as `rsync` over `ssh`, with the shell's key, port and pin.

rsync runs its own `ssh` (a second connection, separate from the run's paramiko one) with
`-F /dev/null` (a developer's ~/.ssh/config stays out), `BatchMode=yes`,
`StrictHostKeyChecking=yes` and `UserKnownHostsFile=<the pod's pinned host key file>`, so the
key learned by the shell on first contact is the only one rsync accepts and nothing is written
to ~/.ssh/known_hosts. Semantics match LocalFileSync: -rlpt, excludes, --delete only when asked,
--chmod, bytes and files transferred from --stats, the remote destination directory created
(`--rsync-path="mkdir -p DIR && rsync"`). A progress bar (`--info=progress2`) is drawn only when
the progress stream is a terminal. A pod without rsync (or this machine without it) uses the
`fallback` FileSync when one is given (SftpFileSync: same semantics over the run's own SSH
connection), and otherwise fails with one clear line saying so. With `small_pulls`, a pull of a
single small file (or of nothing) goes over that SFTP session instead of a new rsync + ssh.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from pegboard.adapters.local_file_sync import parse_rsync_stats, prepare_destination
from pegboard.adapters.process_output import collect_output
from pegboard.adapters.push_checks import check_source, checked_chmod
from pegboard.adapters.sftp_file_sync import SftpFileSync
from pegboard.adapters.ssh_connection import SshTarget
from pegboard.adapters.ssh_host_keys import PinnedHostKeys
from pegboard.domain.errors import NotFound, PortError, Transient, Unauthorized, Unreachable
from pegboard.domain.ports.file_sync import FileSync, TransferResult
from pegboard.domain.ports.remote_shell import HostKeyRejected

logger = logging.getLogger(__name__)

_DEFAULT_TIMEOUT_SEC = 3600.0
# A single file up to this size (the job log, most artifacts) is pulled over the run's own
# SFTP session when `small_pulls` is given: rsync's own process and SSH handshake cost more
# (~0.2-0.5 s) than the whole transfer, and its deltas only pay off for big files.
SMALL_PULL_MAX_BYTES = 16 * 1024 * 1024
_IO_TIMEOUT_SEC = 120  # rsync --timeout: no data for this long means the peer is gone


class RsyncFileSync:
    """rsync between this machine and one pod over ssh."""

    def __init__(
        self,
        target: SshTarget,
        *,
        known_hosts: str | Path,
        connect_timeout: float = 10.0,
        rsync: str = "rsync",
        ssh: str = "ssh",
        remote_rsync: str = "rsync",
        progress: BinaryIO | None = None,
        fallback: FileSync | None = None,
        small_pulls: SftpFileSync | None = None,
        small_pull_max_bytes: int = SMALL_PULL_MAX_BYTES,
    ) -> None:
        self._target = target
        self._known_hosts = Path(known_hosts)
        self._connect_timeout = connect_timeout
        self._rsync = rsync
        self._ssh = ssh
        self._remote_rsync = remote_rsync
        self._progress = progress if progress is not None and _is_terminal(progress) else None
        self._fallback = fallback
        self._use_fallback = False
        self._small_pulls = small_pulls
        self._small_pull_max_bytes = small_pull_max_bytes

    def ssh_command(self) -> list[str]:
        """The ssh argv rsync runs (-e): same key, port and pinned host key as the shell."""
        t = self._target
        argv = [self._ssh, "-F", "/dev/null", "-p", str(t.port)]
        if t.key_path:
            argv += ["-i", str(Path(t.key_path).expanduser())]
            if not t.use_agent:
                argv += ["-o", "IdentitiesOnly=yes"]
        for option in (
            "BatchMode=yes",
            "StrictHostKeyChecking=yes",
            f"UserKnownHostsFile={self._known_hosts}",
            "GlobalKnownHostsFile=/dev/null",
            "UpdateHostKeys=no",
            "CheckHostIP=no",
            f"ConnectTimeout={max(1, int(self._connect_timeout))}",
            "ServerAliveInterval=15",
            "ServerAliveCountMax=4",
            "LogLevel=ERROR",
        ):
            argv += ["-o", option]
        return argv

    def push(
        self,
        local: str,
        remote: str,
        *,
        excludes: Sequence[str] = (),
        delete: bool = False,
        chmod: str | None = None,
        timeout: float | None = None,
    ) -> TransferResult:
        check_source(local)
        if self._use_fallback and self._fallback is not None:
            return self._fallback.push(
                local, remote, excludes=excludes, delete=delete, chmod=chmod, timeout=timeout
            )
        checked_chmod(chmod)
        source_is_dir = os.path.isdir(local.rstrip("/") or "/")
        directory = remote if source_is_dir or remote.endswith("/") else posixpath.dirname(remote)
        directory = directory.rstrip("/") or "/"
        rsync_path = f"mkdir -p {shlex.quote(directory)} && {self._remote_rsync}"
        try:
            return self._transfer(
                [local, self._remote(remote)],
                excludes=excludes,
                delete=delete,
                chmod=chmod,
                timeout=timeout,
                rsync_path=rsync_path,
            )
        except _NoRsync as exc:
            fallback = self._switch_to_fallback(exc)
            return fallback.push(
                local, remote, excludes=excludes, delete=delete, chmod=chmod, timeout=timeout
            )

    def pull(
        self,
        remote: str,
        local: str,
        *,
        excludes: Sequence[str] = (),
        delete: bool = False,
        timeout: float | None = None,
    ) -> TransferResult:
        if self._use_fallback and self._fallback is not None:
            return self._fallback.pull(
                remote, local, excludes=excludes, delete=delete, timeout=timeout
            )
        small = self._small_pulls
        if small is not None and small.pulls_cheaper(remote, max_bytes=self._small_pull_max_bytes):
            return small.pull(remote, local, excludes=excludes, delete=delete, timeout=timeout)
        prepare_destination(local, into_dir=remote.endswith("/") or local.endswith("/"))
        try:
            return self._transfer(
                [self._remote(remote), local],
                excludes=excludes,
                delete=delete,
                chmod=None,
                timeout=timeout,
                rsync_path=self._remote_rsync,
                missing_source=remote,
            )
        except _NoRsync as exc:
            fallback = self._switch_to_fallback(exc)
            return fallback.pull(remote, local, excludes=excludes, delete=delete, timeout=timeout)

    def _switch_to_fallback(self, exc: _NoRsync) -> FileSync:
        """From now on, transfer with the fallback; without one, the one-line error."""
        if self._fallback is None:
            raise PortError(str(exc), status=exc.status) from None
        logger.info("%s; transferring over SFTP instead", exc)
        self._use_fallback = True
        return self._fallback

    # --- internals -----------------------------------------------------------------------

    def _remote(self, path: str) -> str:
        host = self._target.host
        host = f"[{host}]" if ":" in host else host
        return f"{self._target.user}@{host}:{path}"

    def _transfer(
        self,
        paths: list[str],
        *,
        excludes: Sequence[str],
        delete: bool,
        chmod: str | None,
        timeout: float | None,
        rsync_path: str,
        missing_source: str | None = None,
    ) -> TransferResult:
        if (
            PinnedHostKeys(self._known_hosts, pod=self._pod).pinned(
                self._target.host, self._target.port
            )
            is None
        ):
            raise HostKeyRejected(
                f"rsync to pod {self._pod}: no host key pinned for it yet in {self._known_hosts} "
                "(the run's SSH connection pins it on first contact; connect before syncing)"
            )
        rsync = shutil.which(self._rsync)
        if rsync is None:
            raise _NoRsync(f"rsync is not installed on this machine ({self._rsync})")
        argv = [rsync, "-rlpt", "--stats", f"--timeout={_IO_TIMEOUT_SEC}"]
        argv += ["-e", " ".join(_rsync_quote(arg) for arg in self.ssh_command())]
        argv.append(f"--rsync-path={rsync_path}")
        if delete:
            argv.append("--delete")
        if chmod:
            argv.append(f"--chmod={chmod}")
        if self._progress is not None:
            argv.append("--info=progress2")
        argv += [f"--exclude={pattern}" for pattern in excludes]
        argv += ["--", *paths]
        limit = timeout or _DEFAULT_TIMEOUT_SEC
        code, stdout, stderr = _run(argv, limit, self._progress)
        if code is None:
            raise Transient(f"rsync to pod {self._pod}: timed out after {limit:g}s")
        if code != 0:
            raise self._error(code, stderr, missing_source)
        return parse_rsync_stats(stdout)

    @property
    def _pod(self) -> str:
        return self._target.pod or str(self._target)

    def _error(self, code: int, stderr: str, missing_source: str | None) -> PortError:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        detail = lines[0] if lines else f"exit {code}"
        if "Host key verification failed" in stderr or "REMOTE HOST IDENTIFICATION" in stderr:
            return HostKeyRejected(
                f"rsync to pod {self._pod}: the host key does not match the pinned one in "
                f"{self._known_hosts}; refusing to transfer"
            )
        if ("Permission denied" in stderr and code == 255) or "(publickey" in stderr:
            return Unauthorized(f"rsync to pod {self._pod}: authentication refused ({detail})")
        if "Connection refused" in stderr or "Connection timed out" in stderr:
            return Unreachable(f"rsync to pod {self._pod}: {detail}")
        # bash: "rsync: command not found"; dash and busybox: "rsync: not found".
        if re.search(rf"{re.escape(self._remote_rsync)}: (command )?not found", stderr):
            return _NoRsync(
                f"pod {self._pod} has no rsync (install it with a setup command, for example "
                "`apt-get install -y rsync`)",
                status=code,
            )
        if missing_source is not None and "No such file or directory" in stderr:
            return NotFound(f"no such file or directory on the pod: {missing_source}")
        if code == 255:
            return Transient(f"rsync to pod {self._pod}: ssh failed ({detail})", status=code)
        return PortError(f"rsync to pod {self._pod} exited {code}: {detail}", status=code)


class _NoRsync(PortError):
    """rsync is missing on one side: the fallback's cue."""


def _rsync_quote(arg: str) -> str:
    """rsync splits -e on spaces and honours quotes (not backslashes)."""
    if not arg or any(c in arg for c in " \t\"'"):
        if "'" in arg:
            if '"' in arg:
                raise PortError(f"cannot pass {arg!r} to rsync -e (both quote kinds)")
            return f'"{arg}"'
        return f"'{arg}'"
    return arg


def _is_terminal(stream: BinaryIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _run(argv: list[str], timeout: float, progress: BinaryIO | None) -> tuple[int | None, str, str]:
    """Run rsync; forward progress updates ("\\r"-terminated) to `progress`. None: timed out."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    pending = b""

    def forward(data: bytes, from_stdout: bool) -> None:
        nonlocal pending
        if progress is not None and from_stdout:
            pending = _forward_progress(pending + data, progress)

    output = collect_output(proc, deadline=time.monotonic() + timeout, on_chunk=forward)
    if output is None:
        proc.kill()
        proc.wait()
        return None, "", ""
    code = proc.wait()
    if progress is not None:
        progress.write(b"\n")
        progress.flush()
    return code, output[0].decode(errors="replace"), output[1].decode(errors="replace")


def _forward_progress(buffer: bytes, progress: BinaryIO) -> bytes:
    """Write each complete "\\r" update line; keep the unfinished rest."""
    *done, rest = re.split(rb"(?<=[\r\n])", buffer)
    for piece in done:
        if piece.endswith(b"\r") and piece.strip():
            progress.write(b"\r" + piece.rstrip(b"\r"))
            progress.flush()
    return rest

"""ExecShell: the RemoteShell port over Cluster.exec, for a container in a Kubernetes pod.

Every call is one exec of a `pod_commands` command (bash in the container, no SSH): `run`
wraps the command in `timeout`, which kills its whole process group when the time is up (an
exec connection that ends kills nothing in the container); files are read with `tail`/`head`
and written from stdin into a 0600 staging file renamed into place; the detached job and its
probe are the snippets LocalShell and SshShell run (`domain.gpujob.remote_commands`). Stdin is
always length-delimited, so it works over the exec protocol v4 (no stdin close) and v5 alike.

`follow` polls the file (at most 1 MiB a read; at once after new data, backing off to one read
a second while it is quiet): an exec left running to tail the file could not be stopped from
here, so it would outlive the follower in the pod.
"""

from __future__ import annotations

import posixpath
from collections.abc import Generator

from pegboard.adapters import pod_commands
from pegboard.adapters.kubernetes_errors import one_line
from pegboard.adapters.system_clock import SystemClock
from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.gpujob.remote_commands import (
    kill_groups_function,
    parse_detached_status,
    parse_pid,
)
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, ExecResult, ExecTimedOut
from pegboard.domain.ports.remote_shell import (
    ByteStream,
    CommandResult,
    CommandTimedOut,
    DetachedStatus,
    OutputCallback,
)

__all__ = ["ExecShell"]

_PROBE_TIMEOUT_SEC = 30.0
_KILL_GRACE_SEC = 2.0
_TIMEOUT_EXIT = (124, 137)  # `timeout`: the time was up (137 when SIGTERM was not enough)
_KILL_SLACK_SEC = 10.0  # how long past `timeout` the exec may take to report the kill
_FOLLOW_READ = 1 << 20
_FOLLOW_FIRST_POLL_SEC = 0.05
_FOLLOW_IDLE_POLL_SEC = 1.0


class ExecShell:
    """bash in one container of one pod, through the Kubernetes API (`kubectl exec`'s path).

    cwd: where `run` commands start (None: the container's workingDir). procs_dir: where each
    detached job's pid is recorded (an empty file named after it), as SshShell does, so a pod
    that is kept (recycled) can have its jobs killed. clock: for deadlines and the follow's
    polling (virtual on FakeCluster).
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        namespace: str,
        pod: str,
        container: str | None = None,
        cwd: str | None = None,
        procs_dir: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._target = pod_commands.PodTarget(cluster, namespace, pod, container)
        self._cwd = cwd
        self._procs_dir = procs_dir
        self._clock: Clock = clock if clock is not None else SystemClock()

    @property
    def where(self) -> str:
        return self._target.where

    def _exec(
        self,
        argv: list[str],
        *,
        timeout: float,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> tuple[ExecResult, bytes, bytes]:
        out: list[bytes] = []
        err: list[bytes] = []

        def sink(into: list[bytes]) -> OutputCallback:
            def take(chunk: bytes) -> None:
                into.append(chunk)
                if on_output is not None:
                    on_output(chunk)

            return take

        result = self._target.exec(
            argv, stdin=stdin, on_stdout=sink(out), on_stderr=sink(err), timeout=timeout
        )
        return result, b"".join(out), b"".join(err)

    def run(
        self,
        command: str,
        *,
        timeout: float,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        argv = pod_commands.run(
            command,
            timeout=timeout,
            stdin_size=None if stdin is None else len(stdin),
            cwd=self._cwd,
        )
        started = self._clock.monotonic()
        try:
            result, out, err = self._exec(
                argv, timeout=timeout + _KILL_SLACK_SEC, stdin=stdin, on_output=on_output
            )
        except ExecTimedOut:
            message = f"command timed out after {timeout:g}s: {_brief(command)}"
            raise CommandTimedOut(message) from None
        elapsed = self._clock.monotonic() - started
        if result.exit_code in _TIMEOUT_EXIT and elapsed >= timeout * 0.99:
            raise CommandTimedOut(f"command timed out after {timeout:g}s: {_brief(command)}")
        return CommandResult(exit_code=result.exit_code, stdout=out, stderr=err)

    def start_detached(
        self, script_path: str, *, log_path: str, status_path: str, pid_path: str
    ) -> int:
        argv = pod_commands.detach(
            script=script_path, log=log_path, status=status_path, pid=pid_path
        )
        result, out, err = self._exec(argv, timeout=_PROBE_TIMEOUT_SEC)
        if result.exit_code != 0:
            raise PortError(f"could not start {script_path} in {self.where}: {_tail(err)}")
        try:
            pid = parse_pid(out.decode())
        except ValueError:
            raise PortError(f"could not start {script_path}: no pid reported") from None
        if self._procs_dir is not None:
            self.write_file(posixpath.join(self._procs_dir, str(pid)), b"", mode=0o644)
        return pid

    def kill_process_group(self, pgid: int, *, grace: float = _KILL_GRACE_SEC) -> None:
        """SIGTERM the pod's process group `pgid` (a detached job's pid), SIGKILL what is left
        after `grace` seconds (remote_commands.kill_groups_function, as SshShell does)."""
        script = f"{kill_groups_function(grace=grace)}kill_groups {int(pgid)}"
        result = self.run(script, timeout=grace + _PROBE_TIMEOUT_SEC)
        if result.exit_code != 0:
            raise PortError(f"could not kill process group {pgid} in {self.where}")

    def detached_status(self, *, pid_path: str, status_path: str) -> DetachedStatus:
        argv = pod_commands.detached_status(pid=pid_path, status=status_path)
        result, out, err = self._exec(argv, timeout=_PROBE_TIMEOUT_SEC)
        if result.exit_code != 0:
            raise PortError(f"could not probe {pid_path} in {self.where}: {_tail(err)}")
        return parse_detached_status(out.decode(errors="replace"))

    def follow(self, path: str, *, from_offset: int = 0, heartbeat: float = 0.25) -> ByteStream:
        return self._follow(path, from_offset, heartbeat)

    def _follow(self, path: str, offset: int, heartbeat: float) -> Generator[bytes, None, None]:
        # Each read is an exec: right after data the next one comes at once, then further and
        # further apart while the file is quiet (up to _FOLLOW_IDLE_POLL_SEC, or the heartbeat
        # when that is longer); heartbeats cost no exec.
        clock = self._clock
        poll = _FOLLOW_FIRST_POLL_SEC
        next_read = last_yield = clock.monotonic()
        while True:
            now = clock.monotonic()
            if now >= next_read:
                # A file not written yet is waited for; a pod that is gone raises (NotFound).
                data = self._read(path, offset, _FOLLOW_READ) or b""
                now = clock.monotonic()
                if data:
                    offset += len(data)
                    poll, next_read, last_yield = _FOLLOW_FIRST_POLL_SEC, now, now
                    yield data
                    continue
                next_read = now + poll
                poll = min(poll * 2, max(heartbeat, _FOLLOW_IDLE_POLL_SEC))
            if now - last_yield >= heartbeat:
                last_yield = now
                yield b""
                continue
            clock.sleep(max(0.0, min(next_read, last_yield + heartbeat) - now))

    def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        if limit == 0:
            return b""
        data = self._read(path, offset, limit)
        if data is None:
            raise NotFound(f"no such file in {self.where}: {path}")
        return data

    def _read(self, path: str, offset: int, limit: int | None) -> bytes | None:
        """The file's bytes from `offset` (at most `limit`), None when there is no such file."""
        argv = pod_commands.read_file(path, offset=offset, limit=limit)
        result, out, err = self._exec(argv, timeout=_PROBE_TIMEOUT_SEC)
        if result.exit_code == pod_commands.NO_SUCH_FILE:
            return None
        if result.exit_code != 0:
            raise PortError(f"cannot read {path} in {self.where}: {_tail(err)}")
        return out

    def write_file(self, path: str, data: bytes, *, mode: int) -> None:
        argv = pod_commands.write_file(path, mode=mode, size=len(data))
        result, _, err = self._exec(argv, timeout=_PROBE_TIMEOUT_SEC, stdin=bytes(data))
        if result.exit_code != 0:
            raise PortError(f"cannot write {path} in {self.where}: {_tail(err)}")

    def close(self) -> None:
        """Nothing to close: each call is its own exec (detached scripts keep running)."""


def _brief(command: str) -> str:
    return one_line(command)[:80]


def _tail(data: bytes) -> str:
    return one_line(data.decode(errors="replace"))[-300:] or "no error output"

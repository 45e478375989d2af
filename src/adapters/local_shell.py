"""LocalShell: the RemoteShell port on this machine, inside one local pod's directory.

Same contract as the SSH shell: commands run under bash in the pod's workspace with streamed
output and an exit code; a timeout kills the command's whole process group; detached scripts
run in their own session with their pid and exit status recorded to files. Absolute pod paths
given to the port's path arguments are mapped into the pod's fs/ directory (LocalPodPaths);
paths inside command strings are not rewritten, so commands should use the rendered
`{volume_mount}`, which the local provider resolves to the pod's workspace directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Generator
from pathlib import Path

from pegboard.adapters.local_pod_paths import LocalPodPaths
from pegboard.adapters.process_output import collect_output
from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.gpujob.remote_commands import (
    detach_command,
    detached_status_command,
    parse_detached_status,
    parse_pid,
)
from pegboard.domain.ports.remote_shell import (
    ByteStream,
    CommandResult,
    CommandTimedOut,
    DetachedStatus,
    OutputCallback,
)

logger = logging.getLogger(__name__)

_FOLLOW_POLL_SEC = 0.01  # a local file is polled; 10 ms keeps marker latency far below 0.1 s
_KILL_GRACE_SEC = 2.0
_PROBE_TIMEOUT_SEC = 30.0


class LocalShell:
    """bash on this machine, in a local pod's workspace."""

    def __init__(self, paths: LocalPodPaths, *, environ: dict[str, str] | None = None) -> None:
        self._paths = paths
        self._environ = dict(os.environ if environ is None else environ)
        self._environ["PEGBOARD_POD_ROOT"] = str(paths.fs_root)
        self._closed = False

    @property
    def paths(self) -> LocalPodPaths:
        return self._paths

    def run(
        self,
        command: str,
        *,
        timeout: float,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        self._check_open()
        workdir = self._paths.workspace
        try:
            self._paths.make_dirs(workdir)  # the pod deleted meanwhile: not recreated
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=workdir,
                env=self._environ,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:  # the pod went away meanwhile, no bash: the port's PortError
            self._check_open()  # deleted between the check above and the start: NotFound
            raise PortError(f"cannot run {_brief(command)!r}: {exc.strerror or exc}") from None
        try:
            return self._collect(proc, command, timeout=timeout, stdin=stdin, on_output=on_output)
        except BaseException:
            _kill_group(proc.pid)
            proc.wait()
            raise

    def _collect(
        self,
        proc: subprocess.Popen[bytes],
        command: str,
        *,
        timeout: float,
        stdin: bytes | None,
        on_output: OutputCallback | None,
    ) -> CommandResult:
        assert proc.stdout is not None and proc.stderr is not None
        if stdin is not None:
            assert proc.stdin is not None
            # Writing all stdin first is fine for our uses (scripts, small payloads).
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(stdin)
            proc.stdin.close()
        deadline = time.monotonic() + timeout
        output = collect_output(
            proc,
            deadline=deadline,
            on_chunk=None if on_output is None else lambda data, _stdout: on_output(data),
        )
        if output is None:
            raise CommandTimedOut(f"command timed out after {timeout:g}s: {_brief(command)}")
        remaining = max(0.0, deadline - time.monotonic())
        try:
            code = proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            raise CommandTimedOut(
                f"command timed out after {timeout:g}s: {_brief(command)}"
            ) from None
        return CommandResult(exit_code=code, stdout=output[0], stderr=output[1])

    def start_detached(
        self, script_path: str, *, log_path: str, status_path: str, pid_path: str
    ) -> int:
        command = detach_command(
            script_path=self._host(script_path),
            log_path=self._host(log_path),
            status_path=self._host(status_path),
            pid_path=self._host(pid_path),
        )
        result = self.run(command, timeout=_PROBE_TIMEOUT_SEC)
        if result.exit_code != 0:
            raise PortError(f"could not start {script_path}: {_tail(result.stderr)}")
        pid = parse_pid(result.stdout.decode())
        # Recorded so that stopping or terminating the pod kills the job's process group.
        try:
            self._paths.make_dirs(self._paths.procs_dir)
            (self._paths.procs_dir / str(pid)).write_text(script_path + "\n")
        except OSError:  # the pod deleted as the job started: untracked, so it dies here
            _kill_group(pid)
            self._check_open()
            raise PortError(f"could not record the job's process group {pid}") from None
        return pid

    def detached_status(self, *, pid_path: str, status_path: str) -> DetachedStatus:
        command = detached_status_command(
            pid_path=self._host(pid_path), status_path=self._host(status_path)
        )
        result = self.run(command, timeout=_PROBE_TIMEOUT_SEC)
        return parse_detached_status(result.stdout.decode(errors="replace"))

    def follow(self, path: str, *, from_offset: int = 0, heartbeat: float = 0.25) -> ByteStream:
        self._check_open()
        return _follow(Path(self._host(path)), from_offset, heartbeat)

    def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        host = Path(self._host(path))
        try:
            with host.open("rb") as handle:
                handle.seek(offset)
                return handle.read(-1 if limit is None else limit)
        except FileNotFoundError:
            raise NotFound(f"no such file on the pod: {path}") from None
        except OSError as exc:
            raise PortError(f"cannot read {path}: {exc.strerror or exc}") from None

    def write_file(self, path: str, data: bytes, *, mode: int) -> None:
        self._check_open()
        host = Path(self._host(path))
        try:
            self._paths.make_dirs(host.parent)
            tmp = host.with_name(f".{host.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode & 0o777)
            try:
                os.fchmod(fd, mode & 0o7777)  # the umask may have narrowed it
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            os.replace(tmp, host)
        except OSError as exc:
            self._check_open()  # deleted meanwhile: NotFound
            raise PortError(f"cannot write {path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        self._closed = True

    def _host(self, pod_path: str) -> str:
        try:
            return self._paths.to_host(pod_path)
        except ValueError as exc:
            raise PortError(str(exc)) from None

    def _check_open(self) -> None:
        if self._closed:
            raise PortError("the shell is closed")
        if not self._paths.pod_dir.is_dir():
            # The pod was deleted (terminate, cleanup, rm -rf): say so, and recreate nothing.
            raise NotFound(f"local pod {self._paths.pod_id} is gone ({self._paths.pod_dir})")


def _follow(path: Path, offset: int, heartbeat: float) -> Generator[bytes, None, None]:
    try:
        yield from _follow_file(path, offset, heartbeat)
    except OSError as exc:  # a directory, no permission: the port's PortError, never OSError
        raise PortError(f"cannot follow {path}: {exc.strerror or exc}") from None


def _follow_file(path: Path, offset: int, heartbeat: float) -> Generator[bytes, None, None]:
    idle_since = time.monotonic()
    handle = None
    try:
        while True:
            if handle is None:
                try:
                    handle = path.open("rb")
                    handle.seek(offset)
                except FileNotFoundError:
                    handle = None
            data = handle.read(65536) if handle is not None else b""
            if data:
                idle_since = time.monotonic()
                yield data
                continue
            if time.monotonic() - idle_since >= heartbeat:
                idle_since = time.monotonic()
                yield b""
                continue
            time.sleep(_FOLLOW_POLL_SEC)
    finally:
        if handle is not None:
            handle.close()


def kill_process_group(pgid: int, *, grace: float = _KILL_GRACE_SEC) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after `grace` seconds."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    """Whether any member of the process group still runs (zombies do not count)."""
    proc = Path("/proc")
    if not (proc / "self").is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in {"Z", "X"}:
            return True
    return False


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _brief(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    return first if len(first) <= 80 else first[:77] + "..."


def _tail(data: bytes) -> str:
    return data.decode(errors="replace").strip()[-300:]

"""FakeShell and FakeHost: an in-memory pod filesystem, scripted commands and a scripted job.

    host = FakeHost(clock)
    host.on_command(r"^pip install", exit_code=1, stderr=b"no network")
    host.script_job(FakeJob(output=[(0.0, b"step 1\\n"), (5.0, b"DONE\\n")], exit_code=0))
    shell = FakeShell(host)

Time is the FakeClock's: a job's output appears as virtual time passes (follow() sleeps on
the clock, which moves it), its exit status is recorded at its end, and a job with
exit_code=None dies without recording one. Deterministic and stdlib only.
"""

from __future__ import annotations

import math
import posixpath
import re
import threading
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field

from pegboard.adapters.fakes.clock import FakeClock
from pegboard.adapters.fakes.failures import FailsOnDemand, FakeCall, InjectedFailures
from pegboard.domain.errors import NotFound, PegboardError, PortError
from pegboard.domain.ports.remote_shell import (
    ByteStream,
    CommandResult,
    CommandTimedOut,
    DetachedStatus,
    OutputCallback,
)

__all__ = [
    "SHELL_OPERATIONS",
    "SYNC_OPERATIONS",
    "CommandRule",
    "FakeFile",
    "FakeHost",
    "FakeJob",
    "FakeShell",
]

# The operations fail_next knows: the RemoteShell methods, `follow_next` (the next chunk of a
# follow that is already open), and the FileSync methods FakeFileSync runs on this host.
SHELL_OPERATIONS = frozenset(
    {"run", "start_detached", "detached_status", "follow", "follow_next", "read_file", "write_file"}
)
SYNC_OPERATIONS = frozenset({"push", "pull"})


@dataclass
class FakeFile:
    data: bytes
    mode: int
    mtime: float


@dataclass(frozen=True)
class FakeJob:
    """What the detached script does: output chunks at virtual offsets, then an exit status.

    exit_code None: the script dies at its end without recording a status (killed wrapper).
    duration: when it ends (default: the last output's time); math.inf runs until stopped.
    """

    output: Sequence[tuple[float, bytes]] = ()
    exit_code: int | None = 0
    duration: float | None = None

    @property
    def end(self) -> float:
        if self.duration is not None:
            return self.duration
        return max((t for t, _ in self.output), default=0.0)


@dataclass
class CommandRule:
    pattern: re.Pattern[str]
    exit_code: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0
    error: PegboardError | None = None
    times: int | None = None  # None: forever


@dataclass
class _RunningJob:
    job: FakeJob
    pid: int
    started: float
    log_path: str
    status_path: str
    pid_path: str
    emitted: int = 0
    finished: bool = False
    killed: bool = False


@dataclass
class FakeHost(FailsOnDemand[FakeCall]):
    """One fake pod: files, command rules, scripted jobs, and a record of what happened."""

    clock: FakeClock = field(default_factory=FakeClock)
    cwd: str = "/workspace"
    files: dict[str, FakeFile] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    rules: list[CommandRule] = field(default_factory=list)
    jobs: list[_RunningJob] = field(default_factory=list)
    failures: InjectedFailures[FakeCall] = field(
        default_factory=lambda: InjectedFailures(SHELL_OPERATIONS | SYNC_OPERATIONS)
    )
    _queued_jobs: list[FakeJob] = field(default_factory=list)
    _next_pid: int = 4000
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # --- scripting ---------------------------------------------------------------------------
    def on_command(
        self,
        pattern: str,
        *,
        exit_code: int = 0,
        stdout: bytes = b"",
        stderr: bytes = b"",
        duration: float = 0.0,
        error: PegboardError | None = None,
        times: int | None = None,
    ) -> None:
        """Commands matching `pattern` (re.search) get this result; the latest rule wins."""
        self.rules.insert(
            0,
            CommandRule(re.compile(pattern), exit_code, stdout, stderr, duration, error, times),
        )

    def script_job(self, job: FakeJob) -> None:
        """The next start_detached runs this job (default: no output, exit 0 at once)."""
        self._queued_jobs.append(job)

    def _injected(self) -> InjectedFailures[FakeCall]:
        """fail_next's queue (FailsOnDemand), shared by this host's shells and file syncs:
        SHELL_OPERATIONS and SYNC_OPERATIONS. `call.args`: run (command,), push (local, remote),
        pull (remote, local), the others (path,)."""
        return self.failures

    def kill_jobs(self) -> None:
        """What stopping the pod does to detached jobs: they vanish without a status."""
        with self._lock:
            self.advance_jobs()
            for job in self.jobs:
                if not job.finished:
                    job.finished = job.killed = True

    # --- inspection --------------------------------------------------------------------------
    def read(self, path: str) -> bytes:
        return self.files[self.resolve(path)].data

    def mode(self, path: str) -> int:
        return self.files[self.resolve(path)].mode

    def exists(self, path: str) -> bool:
        full = self.resolve(path)
        return full in self.files or self.is_dir(full)

    def is_dir(self, path: str) -> bool:
        prefix = self.resolve(path).rstrip("/") + "/"
        return any(name.startswith(prefix) for name in self.files)

    # --- used by FakeShell and FakeFileSync --------------------------------------------------
    def resolve(self, path: str) -> str:
        joined = path if path.startswith("/") else posixpath.join(self.cwd, path)
        return posixpath.normpath(joined)

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self.files[self.resolve(path)] = FakeFile(data, mode, self.clock.now())

    def take_failure(self, operation: str, *args: str) -> None:
        """Raise the failure fail_next queued for this call, if any."""
        self.failures.raise_if_due(FakeCall(operation, args))

    def match(self, command: str) -> CommandRule | None:
        for rule in self.rules:
            if rule.pattern.search(command) and rule.times != 0:
                if rule.times is not None:
                    rule.times -= 1
                return rule
        return None

    def start_job(self, script: str, log: str, status: str, pid_file: str) -> int:
        with self._lock:
            self._next_pid += 1
            pid = self._next_pid
            if self.resolve(script) not in self.files:
                job = FakeJob(
                    output=[(0.0, f"bash: {script}: No such file\n".encode())], exit_code=127
                )
            else:
                job = self._queued_jobs.pop(0) if self._queued_jobs else FakeJob()
            self.put(log, b"")
            self.files.pop(self.resolve(status), None)
            self.put(pid_file, f"{pid}\n".encode())
            self.jobs.append(_RunningJob(job, pid, self.clock.monotonic(), log, status, pid_file))
            self.advance_jobs()
            return pid

    def advance_jobs(self) -> None:
        """Bring every job's log and status up to the clock's present."""
        with self._lock:
            now = self.clock.monotonic()
            for run in self.jobs:
                if run.finished:
                    continue
                elapsed = now - run.started
                due = [chunk for t, chunk in run.job.output if t <= elapsed]
                for chunk in due[run.emitted :]:
                    entry = self.files.setdefault(
                        self.resolve(run.log_path), FakeFile(b"", 0o644, self.clock.now())
                    )
                    entry.data += chunk
                run.emitted = len(due)
                if elapsed >= run.job.end:
                    run.finished = True
                    if run.job.exit_code is not None:
                        self.put(run.status_path, f"{run.job.exit_code}\n".encode())

    def next_job_event(self) -> float:
        """Seconds of virtual time until some job writes output or ends (inf when none)."""
        now = self.clock.monotonic()
        waits = []
        for run in self.jobs:
            if run.finished:
                continue
            elapsed = now - run.started
            waits += [t - elapsed for t, _ in run.job.output if t > elapsed]
            waits.append(run.job.end - elapsed)
        return max(0.0, min(waits, default=math.inf))


class FakeShell(FailsOnDemand[FakeCall]):
    """The RemoteShell port over a FakeHost (fail_next: its host's, for SHELL_OPERATIONS)."""

    fail_operations = SHELL_OPERATIONS

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.closed = False

    def _injected(self) -> InjectedFailures[FakeCall]:
        return self.host.failures

    def run(
        self,
        command: str,
        *,
        timeout: float,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        self._check_open()
        self.host.take_failure("run", command)
        self.host.commands.append(command)
        rule = self.host.match(command)
        if rule is None:
            return CommandResult(0, b"", b"")
        if rule.error is not None:
            raise rule.error
        if rule.duration > timeout:
            self.host.clock.sleep(timeout)
            raise CommandTimedOut(f"command timed out after {timeout:g}s")
        if rule.duration:
            self.host.clock.sleep(rule.duration)
        for chunk in (rule.stdout, rule.stderr):
            if chunk and on_output is not None:
                on_output(chunk)
        return CommandResult(rule.exit_code, rule.stdout, rule.stderr)

    def start_detached(
        self, script_path: str, *, log_path: str, status_path: str, pid_path: str
    ) -> int:
        self._check_open()
        self.host.take_failure("start_detached", script_path)
        self.host.commands.append(f"<start_detached {script_path}>")
        return self.host.start_job(script_path, log_path, status_path, pid_path)

    def detached_status(self, *, pid_path: str, status_path: str) -> DetachedStatus:
        self._check_open()
        self.host.take_failure("detached_status", status_path)
        self.host.advance_jobs()
        status = self.host.files.get(self.host.resolve(status_path))
        if status is not None:
            return DetachedStatus(running=False, exit_code=int(status.data.decode().strip()))
        pid_file = self.host.files.get(self.host.resolve(pid_path))
        pid = int(pid_file.data.decode().strip()) if pid_file else None
        alive = any(run.pid == pid and not run.finished for run in self.host.jobs)
        return DetachedStatus(running=alive)

    def follow(self, path: str, *, from_offset: int = 0, heartbeat: float = 0.25) -> ByteStream:
        self._check_open()
        self.host.take_failure("follow", path)
        return self._follow(path, from_offset, heartbeat)

    def _follow(self, path: str, offset: int, heartbeat: float) -> Generator[bytes, None, None]:
        full = self.host.resolve(path)
        while True:
            self.host.take_failure("follow_next", path)
            self.host.advance_jobs()
            entry = self.host.files.get(full)
            data = entry.data[offset:] if entry is not None else b""
            if data:
                offset += len(data)
                yield data
                continue
            wait = min(heartbeat, self.host.next_job_event())
            self.host.clock.sleep(wait if wait > 0 else heartbeat)
            self.host.advance_jobs()
            entry = self.host.files.get(full)
            data = entry.data[offset:] if entry is not None else b""
            offset += len(data)
            yield data

    def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        self._check_open()
        self.host.take_failure("read_file", path)
        self.host.advance_jobs()
        entry = self.host.files.get(self.host.resolve(path))
        if entry is None:
            raise NotFound(f"no such file on the pod: {path}")
        return entry.data[offset:] if limit is None else entry.data[offset : offset + limit]

    def write_file(self, path: str, data: bytes, *, mode: int) -> None:
        self._check_open()
        self.host.take_failure("write_file", path)
        self.host.put(path, bytes(data), mode)

    def close(self) -> None:
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise PortError("the shell is closed")

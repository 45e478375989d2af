"""SshShell: the RemoteShell port over the run's one SSH connection (paramiko).

Every command is a channel of the same transport. Its first stdout line is the remote shell's
pid (`printf $$`, stripped before anyone sees the output): sshd makes each command's shell a
session and process-group leader, so a timeout kills exactly that group (`kill -- -PGID`).
Files travel over SFTP (never in a command line): written into a private 0700 staging
directory with their final mode set before the first byte, then renamed into place.

Drops: idempotent calls (probes, reads, writes, follow) reconnect with bounded backoff and
repeat; `follow` resumes at the byte offset it had delivered, so no byte is lost or repeated.
A command that was already running when the connection broke is not repeated (it may have
run): it raises Transient.
"""

from __future__ import annotations

import errno
import logging
import posixpath
import secrets
import select
import shlex
import stat
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from pegboard.adapters.ssh_connection import SftpUnavailable, SshConnection
from pegboard.adapters.ssh_errors import connection_lost
from pegboard.domain.errors import NotFound, PortError, Transient
from pegboard.domain.gpujob.remote_commands import (
    detach_and_follow_command,
    detached_status_command,
    kill_groups_function,
    parse_detached_status,
    parse_launch_exit,
    parse_pid,
)
from pegboard.domain.ports.remote_shell import (
    CommandResult,
    CommandTimedOut,
    DetachedStatus,
    OutputCallback,
)

if TYPE_CHECKING:
    from paramiko.channel import Channel
    from paramiko.sftp_client import SFTPClient
    from paramiko.transport import Transport

logger = logging.getLogger(__name__)

_PROBE_TIMEOUT_SEC = 30.0
_KILL_GRACE_SEC = 2.0
_CHUNK = 65536
_REST_CHUNK = 1 << 20  # what a follow reads of its log per call once the job has ended
_NO_SUCH_FILE = 3  # exit status of the shell read when the file is not there
# How long a status probe of the job this shell launched waits on the launch's channel for
# the job's end before answering "running" (log bytes arriving end the wait at once).
_LAUNCH_STATUS_WAIT_SEC = 0.1
_T = TypeVar("_T")


class SshShell:
    """bash on the pod over SSH.

    cwd: where commands start (the run's workspace). procs_dir: where each detached job's pid
    is recorded (an empty file named after it), so stopping the pod can kill its jobs.
    owns_connection: False for a shell on a connection others still use (the ssh provider's
    pod shells: the lifecycle action runs on it after the shell is closed); its close() is
    then a no-op and the connection's owner closes it.
    """

    def __init__(
        self,
        connection: SshConnection,
        *,
        cwd: str | None = None,
        procs_dir: str | None = None,
        owns_connection: bool = True,
    ) -> None:
        self._conn = connection
        self._cwd = cwd
        self._procs_dir = procs_dir
        self._owns_connection = owns_connection
        self._launched: _Follow | None = None  # the last launch's channel, following its log
        self._job: _Launch | None = None  # that launch's job, whose end its channel reports

    @property
    def connection(self) -> SshConnection:
        return self._conn

    # --- commands ------------------------------------------------------------------------

    def run(
        self,
        command: str,
        *,
        timeout: float,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        transport, channel = self._conn.open_session()
        header = _PidHeader()
        try:
            channel.exec_command(self._wrap(command))
            return self._collect(
                transport,
                channel,
                header,
                command,
                timeout=timeout,
                stdin=stdin,
                on_output=on_output,
            )
        except PortError:
            raise
        except Exception as exc:  # paramiko/socket errors mid-command
            if not transport.is_active():
                raise connection_lost(
                    str(self._conn.target), f"running: {_brief(command)}"
                ) from None
            raise PortError(f"ssh to {self._conn.target}: {exc}") from None
        except BaseException:
            # Ctrl-C: the remote command must not outlive us (the detached job is another story).
            if header.pgid and transport.is_active():
                self.kill_process_group(header.pgid, grace=0.5)
            raise
        finally:
            channel.close()

    def _wrap(self, command: str) -> str:
        cd = f"cd {shlex.quote(self._cwd)} && " if self._cwd else ""
        # The login shell already read the user's rc files; the inner bash need not again
        # (sshd makes bash source ~/.bashrc, ~80 ms per command for root on our machines).
        # Not exec'd: a command killed by a signal then exits 128+N, as in any shell (sshd
        # would report the signal, which paramiko drops).
        inner = f"bash --norc --noprofile -c {shlex.quote(command)}"
        return f"printf '%s\\n' \"$$\"; {cd}{inner}; exit $?"

    def _collect(
        self,
        transport: Transport,
        channel: Channel,
        header: _PidHeader,
        command: str,
        *,
        timeout: float,
        stdin: bytes | None,
        on_output: OutputCallback | None,
    ) -> CommandResult:
        deadline = time.monotonic() + timeout
        out: list[bytes] = []
        err: list[bytes] = []

        def drain() -> None:
            while channel.recv_ready():
                data = header.feed(channel.recv(_CHUNK))
                if data:
                    out.append(data)
                    if on_output is not None:
                        on_output(data)
            while channel.recv_stderr_ready():
                data = channel.recv_stderr(_CHUNK)
                err.append(data)
                if on_output is not None:
                    on_output(data)

        if stdin is not None:
            channel.sendall(stdin)
        channel.shutdown_write()
        while True:
            drain()
            if channel.eof_received or channel.closed:
                # All output precedes EOF; the exit status follows it.
                if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
                    self._timed_out(header.pgid, command, timeout)
                drain()
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._timed_out(header.pgid, command, timeout)
            select.select([channel], [], [], min(remaining, 1.0))
        code = channel.exit_status
        if code == -1 and not transport.is_active():
            raise connection_lost(str(self._conn.target), f"running: {_brief(command)}")
        # -1 with a live connection: the session itself was killed on the host.
        return CommandResult(exit_code=code, stdout=b"".join(out), stderr=b"".join(err))

    def _timed_out(self, pgid: int | None, command: str, timeout: float) -> None:
        if pgid:
            self.kill_process_group(pgid)
        raise CommandTimedOut(f"command timed out after {timeout:g}s: {_brief(command)}")

    def kill_process_group(self, pgid: int, *, grace: float = _KILL_GRACE_SEC) -> None:
        """SIGTERM the remote group, SIGKILL what is left after `grace` seconds."""
        script = f"{kill_groups_function(grace=grace)}kill_groups {int(pgid)}"
        try:
            self.run(script, timeout=grace + _PROBE_TIMEOUT_SEC)
        except PortError as exc:
            logger.warning("could not kill remote process group %s: %s", pgid, exc)

    # --- the detached job ----------------------------------------------------------------

    def start_detached(
        self, script_path: str, *, log_path: str, status_path: str, pid_path: str
    ) -> int:
        """Start the job; the same channel then follows its log until the job ends
        (remote_commands.detach_and_follow_command), and the first `follow` of that log from
        its start takes the channel over: one command for the launch and the follow, and no
        kill of the tail afterwards. The job's record in procs_dir is written by it too."""
        command = detach_and_follow_command(
            script_path=script_path,
            log_path=log_path,
            status_path=status_path,
            pid_path=pid_path,
            record_dir=self._procs_dir,
        )
        self._drop_launched()
        transport, channel = self._conn.open_session()
        header = _PidHeader()
        try:
            channel.exec_command(self._wrap(command))
            channel.shutdown_write()
            pid, rest = self._read_launched_pid(channel, header, script_path)
        except PortError:
            channel.close()
            raise
        except Exception as exc:  # paramiko/socket errors mid-command
            channel.close()
            if not transport.is_active():
                raise connection_lost(str(self._conn.target), f"starting {script_path}") from None
            raise PortError(f"ssh to {self._conn.target}: {exc}") from None
        except BaseException:
            channel.close()
            raise
        self._job = _Launch(pid_path, status_path, transport, channel)
        self._launched = _Follow(
            self,
            self._absolute(log_path),
            0,
            0.25,
            adopted=(transport, channel, header, rest),
            job=self._job,
        )
        return pid

    def _read_launched_pid(
        self, channel: Channel, header: _PidHeader, script_path: str
    ) -> tuple[int, bytes]:
        """The job's pid line, and the log bytes that came after it in the same reads."""
        deadline = time.monotonic() + _PROBE_TIMEOUT_SEC
        out = b""
        err = b""
        while True:
            while channel.recv_ready():
                out += header.feed(channel.recv(_CHUNK))
            while channel.recv_stderr_ready():
                err = (err + channel.recv_stderr(_CHUNK))[-2000:]
            line, newline, rest = out.partition(b"\n")
            if newline:
                try:
                    return parse_pid(line.decode()), rest
                except ValueError:
                    raise PortError(f"could not start {script_path}: no pid reported") from None
            if channel.eof_received or channel.closed:
                channel.status_event.wait(1.0)
                raise PortError(f"could not start {script_path}: {_tail(err) or 'no pid reported'}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._timed_out(header.pgid, f"start {script_path}", _PROBE_TIMEOUT_SEC)
            select.select([channel], [], [], min(remaining, 1.0))

    def _drop_launched(self) -> None:
        launched, self._launched = self._launched, None
        if launched is not None:
            launched.close()

    def detached_status(self, *, pid_path: str, status_path: str) -> DetachedStatus:
        """The job this shell launched is asked on its launch's channel while that channel
        lives (no command: it ends with the job and says how); any other job, or after a
        drop, by a command on the host."""
        job = self._job
        if job is not None and job.is_for(pid_path, status_path):
            status = job.status(wait=_LAUNCH_STATUS_WAIT_SEC)
            if status is not None:
                return status
        command = detached_status_command(pid_path=pid_path, status_path=status_path)
        result = self._again_after_drop(lambda: self.run(command, timeout=_PROBE_TIMEOUT_SEC))
        return parse_detached_status(result.stdout.decode(errors="replace"))

    def follow(self, path: str, *, from_offset: int = 0, heartbeat: float = 0.25) -> _Follow:
        launched, self._launched = self._launched, None
        absolute = self._absolute(path)
        if launched is not None and launched.path == absolute and from_offset == 0:
            launched.heartbeat = heartbeat
            return launched  # the launch's own channel, already following this log
        if launched is not None:
            launched.close()
        return _Follow(self, absolute, from_offset, heartbeat)

    # --- files over SFTP -----------------------------------------------------------------

    def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        remote = self._absolute(path)

        def read() -> bytes:
            sftp = self._conn.sftp()
            with sftp.open(remote, "rb") as handle:
                handle.seek(offset)
                return bytes(handle.read(limit))

        if self._conn.sftp_unavailable is None:
            try:
                return self._again_after_drop(lambda: self._sftp_call(read, f"read {path}"))
            except SftpUnavailable:
                pass
        return self._again_after_drop(lambda: self._read_over_shell(path, remote, offset, limit))

    def write_file(self, path: str, data: bytes, *, mode: int) -> None:
        remote = self._absolute(path)
        if self._conn.sftp_unavailable is None:
            try:
                self._again_after_drop(
                    lambda: self._sftp_call(
                        lambda: self._write(remote, data, mode), f"write {path}"
                    )
                )
                return
            except SftpUnavailable:
                pass
        self._again_after_drop(lambda: self._write_over_shell(path, remote, data, mode))

    # A host whose SFTP does not work (SftpUnavailable): the same reads and writes as one shell
    # command each, the data on stdin and stdout (never in the command line).

    def _read_over_shell(self, path: str, remote: str, offset: int, limit: int | None) -> bytes:
        q = shlex.quote(remote)
        command = f"[ -f {q} ] || exit {_NO_SUCH_FILE}; tail -c +{offset + 1} -- {q}"
        if limit is not None:
            command += f" | head -c {int(limit)}"
        result = self.run(command, timeout=_PROBE_TIMEOUT_SEC)
        if result.exit_code == _NO_SUCH_FILE:
            raise NotFound(f"no such file on the pod: {path}")
        if result.exit_code != 0:
            raise PortError(f"cannot read {path} on the pod: {_tail(result.stderr)}")
        return result.stdout

    def _write_over_shell(self, path: str, remote: str, data: bytes, mode: int) -> None:
        parent = posixpath.dirname(remote) or "/"
        q, qp = shlex.quote(remote), shlex.quote(parent)
        staged = shlex.quote(posixpath.join(parent, f".{posixpath.basename(remote)}.pegboard-"))
        # mktemp makes the file 0600; its final mode is set before the first byte is written.
        command = (
            f"umask 077 && mkdir -p -- {qp} && t=$(mktemp {staged}XXXXXXXX) && "
            f'{{ chmod {mode & 0o7777:o} "$t" && cat > "$t" && mv -f -- "$t" {q}; }} '
            f'|| {{ rc=$?; rm -f -- "$t"; exit $rc; }}'
        )
        result = self.run(command, timeout=_PROBE_TIMEOUT_SEC, stdin=data)
        if result.exit_code != 0:
            raise PortError(f"cannot write {path} on the pod: {_tail(result.stderr)}")

    def _write(self, remote: str, data: bytes, mode: int) -> None:
        sftp = self._conn.sftp()
        parent, name = posixpath.split(remote)
        _makedirs(sftp, parent or "/")
        # Nobody else can open a file inside a 0700 directory, whatever the umask did.
        staging = posixpath.join(parent, f".{name}.pegboard-{secrets.token_hex(4)}")
        sftp.mkdir(staging, 0o700)
        staged = posixpath.join(staging, name)
        try:
            sftp.chmod(staging, 0o700)
            with sftp.open(staged, "wb") as handle:
                handle.chmod(mode & 0o7777)  # the final mode, before the first byte
                handle.set_pipelined(True)
                handle.write(data)
            try:
                sftp.posix_rename(staged, remote)
            except OSError:
                # A server without the posix-rename extension: plain rename cannot replace.
                _remove_quietly(sftp, remote)
                sftp.rename(staged, remote)
        finally:
            _remove_quietly(sftp, staged)
            try:
                sftp.rmdir(staging)
            except OSError:
                pass

    def _sftp_call(self, call: Callable[[], _T], doing: str) -> _T:
        try:
            with self._conn.sftp_lock:
                return call()
        except FileNotFoundError:
            raise NotFound(f"no such file on the pod: {doing.split(' ', 1)[1]}") from None
        except PortError:
            raise
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise NotFound(f"no such file on the pod: {doing.split(' ', 1)[1]}") from None
            if self._conn.alive:
                raise PortError(f"cannot {doing} on the pod: {exc.strerror or exc}") from None
            raise connection_lost(str(self._conn.target), doing) from None
        except Exception as exc:  # paramiko.SSHException, EOFError
            if self._conn.alive:
                raise PortError(f"cannot {doing} on the pod: {exc}") from None
            raise connection_lost(str(self._conn.target), doing) from None

    # --- plumbing ------------------------------------------------------------------------

    def _again_after_drop(self, call: Callable[[], _T]) -> _T:
        """Run an idempotent call; after a dropped connection, reconnect once and repeat."""
        try:
            return call()
        except Transient as exc:
            if self._conn.alive:
                raise
            logger.info("%s; reconnecting", exc)
            self._conn.reconnect()
            return call()

    def _absolute(self, path: str) -> str:
        if path.startswith("/") or not self._cwd:
            return path
        return posixpath.join(self._cwd, path)

    def close(self) -> None:
        self._drop_launched()
        self._job = None
        if self._owns_connection:
            self._conn.close()


class _Launch:
    """The job of a launch whose channel follows its log (detach_and_follow_command): the
    channel stays open while the job runs and ends with a line saying how the job ended.

    `status` answers from that channel: running while it is open (waiting up to `wait` for its
    end; log bytes end the wait at once), the job's end once it closed with that line; None
    (ask the host) when the channel or the connection broke, or the line is missing."""

    def __init__(self, pid_path: str, status_path: str, transport: Transport, channel: Channel):
        self._paths = (pid_path, status_path)
        self._transport = transport
        self.channel = channel
        self.stderr = b""  # the channel's stderr so far (its tail); the follow reads it too

    def is_for(self, pid_path: str, status_path: str) -> bool:
        return self._paths == (pid_path, status_path)

    def read_stderr(self) -> bytes:
        channel = self.channel
        while channel.recv_stderr_ready():
            self.stderr = (self.stderr + channel.recv_stderr(_CHUNK))[-2000:]
        return self.stderr

    def status(self, *, wait: float) -> DetachedStatus | None:
        channel = self.channel
        deadline = time.monotonic() + wait
        # Ended: EOF (every byte of stdout and stderr is in) and the exit status, which sshd
        # may send before or after the EOF.
        while not (channel.eof_received and channel.exit_status_ready()):
            if not self._transport.is_active():
                return None
            if channel.closed:
                return None  # closed by us (the follow gave up on it): no end to read
            remaining = deadline - time.monotonic()
            if remaining <= 0 or channel.recv_ready():
                return DetachedStatus(running=True)  # log bytes first: the caller reads them
            self.read_stderr()  # the channel is readable while either stream holds bytes
            if channel.eof_received:
                channel.status_event.wait(remaining)
            else:
                select.select([channel], [], [], remaining)  # log bytes or the EOF
        if channel.exit_status != 0:
            return None
        return parse_launch_exit(self.read_stderr())


class _Follow:
    """`tail -c +N -f` on one channel; resumes at the delivered offset after a drop.

    `adopted`: the channel of a launch that follows its job's log itself (start_detached) and
    the bytes already read past its pid line. That tail ends when the job does: the follow then
    only reports heartbeats (the monitor reads the rest itself once the job is over), and
    closing it kills nothing."""

    def __init__(
        self,
        shell: SshShell,
        path: str,
        offset: int,
        heartbeat: float,
        *,
        adopted: tuple[Transport, Channel, _PidHeader, bytes] | None = None,
        job: _Launch | None = None,
    ) -> None:
        self._shell = shell
        self.path = path
        self._offset = offset
        self.heartbeat = heartbeat
        self._transport: Transport | None = None
        self._channel: Channel | None = None
        self._header = _PidHeader()
        self._pending = b""
        self._bound_to_job = adopted is not None
        self._job_over = False
        self._rest_drained = False
        if adopted is not None:
            self._transport, self._channel, self._header, self._pending = adopted
        self._job = job  # the adopted channel's job: its stderr is read through it
        self._stderr = b""
        self._closed = False

    @property
    def offset(self) -> int:
        """Bytes of the file delivered so far (from the start of the file)."""
        return self._offset

    def __iter__(self) -> _Follow:
        return self

    def __next__(self) -> bytes:
        if self._closed:
            raise StopIteration
        if self._pending:
            data, self._pending = self._pending, b""
            self._offset += len(data)
            return data
        deadline = time.monotonic() + self.heartbeat
        while True:
            if self._job_over:
                rest = self._read_rest()
                if rest:
                    self._offset += len(rest)
                    return rest
                time.sleep(max(0.0, deadline - time.monotonic()))
                return b""
            if self._channel is None:
                self._open()
            channel = self._channel
            assert channel is not None
            self._read_stderr(channel)
            if channel.recv_ready():
                data = self._header.feed(channel.recv(_CHUNK))
                if data:
                    self._offset += len(data)
                    return data
                continue
            if channel.eof_received or channel.closed:
                self._ended(channel)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b""
            select.select([channel], [], [], remaining)

    def _read_stderr(self, channel: Channel) -> None:
        if self._bound_to_job and self._job is not None:
            self._stderr = self._job.read_stderr()
            return
        while channel.recv_stderr_ready():
            self._stderr = (self._stderr + channel.recv_stderr(_CHUNK))[-2000:]

    def _open(self) -> None:
        quoted = shlex.quote(self.path)
        command = (
            f'f={quoted}; while [ ! -e "$f" ]; do sleep 0.05; done; '
            f'exec tail -c +{self._offset + 1} -f -- "$f"'
        )
        self._transport, self._channel = self._shell.connection.open_session()
        self._header = _PidHeader()
        self._bound_to_job = False
        self._channel.exec_command(self._shell._wrap(command))
        self._channel.shutdown_write()

    def _read_rest(self) -> bytes:
        """After the job ended, what its log holds past what the tail delivered: the launch
        stops its tail once the job exits, which can be before the tail read the last writes.
        The log is complete by then, so reading it by offset (one bounded chunk a call) until
        nothing is left loses no byte."""
        if self._rest_drained:
            return b""
        rest = self._shell.read_file(self.path, offset=self._offset, limit=_REST_CHUNK)
        if not rest:
            self._rest_drained = True
        return rest

    def _ended(self, channel: Channel) -> None:
        """The tail stopped: the job's own end, a drop (reconnect), or a real failure."""
        transport = self._transport
        channel.status_event.wait(1.0)
        self._read_stderr(channel)  # the job's end line, kept for its status (_Launch)
        channel.close()
        self._channel = None
        live = transport is not None and transport.is_active()
        if self._bound_to_job and live and channel.exit_status == 0:
            self._job_over = True
            return
        if transport is not None and not live:
            logger.info(
                "following %s: connection lost at byte %d; resuming", self.path, self._offset
            )
            self._shell.connection.reconnect(after=transport)
            return
        message = self._stderr.decode(errors="replace").strip()[-300:]
        self._closed = True
        raise PortError(f"following {self.path} stopped: {message or 'tail exited'}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        channel, pgid = self._channel, self._header.pgid
        self._channel = None
        if channel is None:
            return
        channel.close()
        if self._bound_to_job:
            return  # its tail ends with the job, or at its next write to the closed channel
        if pgid and self._transport is not None and self._transport.is_active():
            # tail exits on its own at its next write; a wait for a missing file would not.
            try:
                killer = self._transport.open_session(timeout=5)
                killer.exec_command(f"kill -- -{pgid} 2>/dev/null")
                killer.close()
            except Exception:  # best effort
                pass


class _PidHeader:
    """Strips the wrapper's first stdout line (the remote pid) and keeps it."""

    def __init__(self) -> None:
        self.pgid: int | None = None
        self._buffer = b""

    def feed(self, data: bytes) -> bytes:
        if self.pgid is not None:
            return data
        self._buffer += data
        line, newline, rest = self._buffer.partition(b"\n")
        if not newline:
            return b""
        try:
            self.pgid = int(line)
        except ValueError:
            self.pgid = 0  # a shell that printed something first: no group to kill
            return self._buffer
        self._buffer = b""
        return rest


def _makedirs(sftp: SFTPClient, path: str) -> None:
    missing: list[str] = []
    current = path
    while current not in ("", "/"):
        try:
            mode = sftp.stat(current).st_mode
        except FileNotFoundError:
            missing.append(current)
            current = posixpath.dirname(current)
            continue
        if mode is not None and not stat.S_ISDIR(mode):
            raise PortError(f"not a directory on the pod: {current}")
        break
    for directory in reversed(missing):
        try:
            sftp.mkdir(directory)
        except OSError:
            if not _is_dir(sftp, directory):
                raise


def _is_dir(sftp: SFTPClient, path: str) -> bool:
    try:
        mode = sftp.stat(path).st_mode
    except OSError:
        return False
    return mode is not None and stat.S_ISDIR(mode)


def _remove_quietly(sftp: SFTPClient, path: str) -> None:
    try:
        sftp.remove(path)
    except OSError:
        pass


def _brief(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    return first if len(first) <= 80 else first[:77] + "..."


def _tail(data: bytes) -> str:
    return data.decode(errors="replace").strip()[-300:]

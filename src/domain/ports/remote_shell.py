"""RemoteShell port: run commands on the pod, start the job detached, follow its log.

One instance is one connection to one pod (SSH later: one paramiko connection per run, reused
for every command). Paths are the pod's own paths. Errors cross the port as PortError
subclasses: CommandTimedOut (the command was killed), NotFound (no such file), Transient or
Unreachable (the connection failed; worth retrying), Unauthorized (the key was refused) and
HostKeyRejected (the host key changed since it was pinned).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import PortError

__all__ = [
    "ByteStream",
    "CommandResult",
    "CommandTimedOut",
    "DetachedStatus",
    "HostKeyRejected",
    "OutputCallback",
    "RemoteShell",
]

OutputCallback = Callable[[bytes], None]


class CommandTimedOut(PortError):
    """The command ran past its timeout and was killed (with its whole process group)."""


class HostKeyRejected(PortError):
    """The pod's host key differs from the one pinned for it on first contact (never retried)."""


@attrs.frozen
class CommandResult:
    """Exit code and the complete stdout and stderr of one command."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    exit_code: int
    stdout: bytes
    stderr: bytes


@attrs.frozen
class DetachedStatus:
    """A detached script as seen now.

    running: the pid is alive and no exit status is recorded yet.
    exit_code: the recorded exit status once the script has finished.
    Neither (not running, exit_code None): the script vanished without recording a status
    (killed with its wrapper, pod rebooted).
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    running: bool
    exit_code: int | None = None

    @property
    def vanished(self) -> bool:
        return not self.running and self.exit_code is None


@runtime_checkable
class ByteStream(Protocol):
    """An iterator of byte chunks that can be closed early."""

    def __iter__(self) -> Iterator[bytes]: ...

    def __next__(self) -> bytes: ...

    def close(self) -> None: ...


@runtime_checkable
class RemoteShell(Protocol):
    """A shell on the pod."""

    def run(
        self,
        command: str,
        *,
        timeout: float,
        stdin: bytes | None = None,
        on_output: OutputCallback | None = None,
    ) -> CommandResult:
        """Run `command` with bash; stream stdout and stderr chunks to on_output as they come.

        The result always holds the complete stdout and stderr. A non-zero exit is a result,
        not an error. Past `timeout` seconds the command's process group is killed and
        CommandTimedOut raised.
        """
        ...

    def start_detached(
        self, script_path: str, *, log_path: str, status_path: str, pid_path: str
    ) -> int:
        """Start `bash script_path` detached from this connection; return its pid at once.

        stdout and stderr go to log_path (truncated first); the pid is written to pid_path and,
        when the script ends, its exit status to status_path (atomically, via rename).
        """
        ...

    def detached_status(self, *, pid_path: str, status_path: str) -> DetachedStatus:
        """Running, finished with a status, or vanished (see DetachedStatus)."""
        ...

    def follow(self, path: str, *, from_offset: int = 0, heartbeat: float = 0.25) -> ByteStream:
        """Stream the bytes appended to `path` from `from_offset` on, as they are written.

        A missing file is waited for. Whenever nothing new arrived for `heartbeat` seconds the
        stream yields b"" so the reader can check other things. It never ends on its own: close
        it. A broken connection raises a PortError from next().
        """
        ...

    def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        """The file's bytes from `offset` to its current end, at most `limit` of them when
        given (a reader of a large log takes it in pieces); NotFound when it does not exist."""
        ...

    def write_file(self, path: str, data: bytes, *, mode: int) -> None:
        """Create or replace `path` with `data` and permission bits `mode` (parents created).

        The bytes travel as data, never through a shell command line or heredoc, and the file
        never exists with wider permissions than `mode` (secrets are 0600 from the first byte).
        """
        ...

    def close(self) -> None:
        """Close the connection; detached scripts keep running."""
        ...

"""Nothing outlives the sandbox: containers and the scratch directory go when its process goes.

A sandbox killed with SIGKILL runs no cleanup code. So on start it launches a small watchdog
process (this file, run as a script with `python -I -S`: no imports of ours) in its own session,
holding the read end of a pipe whose only write end the sandbox keeps. The sandbox writes
`+PGID` when a container starts and `-PGID` when it ends. When the pipe reaches EOF, however the
sandbox ended, the watchdog SIGKILLs every process group still listed (a container's children
included) and every group with a process working inside the scratch directory (a container
started just before the sandbox died, not listed yet), removes the scratch directory, and exits.

Left-overs of a sandbox whose watchdog was killed too are swept on the next start: each scratch
directory holds a `lock` file its sandbox keeps flock()ed (locked before it gets that name); a
directory of ours whose lock can be taken has no live owner and is removed. A directory without
a lock file (an older pegboard's, perhaps still running) is left alone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SCRATCH_PREFIX = "pegboard-k8s-sandbox-"
LOCK_NAME = "lock"


class Reaper:
    """The sandbox's side: start the watchdog, tell it about process groups, stop it."""

    def __init__(self, scratch: Path) -> None:
        self._scratch = scratch
        self._lock = threading.Lock()
        read_end, self._write_end = os.pipe()  # both non-inheritable: containers never hold them
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, str(scratch)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C to the terminal does not stop the cleanup
                close_fds=True,
            )
        finally:
            os.close(read_end)

    def track(self, pgid: int) -> None:
        self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        with self._lock, contextlib.suppress(OSError):
            if self._write_end >= 0:
                os.write(self._write_end, line.encode())

    def close(self, timeout: float = 2.0) -> None:
        """EOF to the watchdog: it kills what is left and removes the scratch directory."""
        with self._lock:
            if self._write_end >= 0:
                os.close(self._write_end)
                self._write_end = -1
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout)


def hold_scratch_lock(scratch: Path) -> int:
    """Create and flock() the scratch directory's lock file; the fd stays open while we live."""
    import fcntl

    staging = scratch / f".{LOCK_NAME}"
    fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.set_inheritable(fd, False)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.rename(staging, scratch / LOCK_NAME)  # a sweeper never sees it unlocked
    return fd


def sweep_abandoned_scratch(root: Path | None = None) -> list[Path]:
    """Remove our scratch directories whose sandbox is gone (nobody holds their lock)."""
    import fcntl

    removed: list[Path] = []
    base = Path(root or tempfile.gettempdir())
    try:
        candidates = [entry for entry in base.iterdir() if entry.name.startswith(SCRATCH_PREFIX)]
    except OSError:
        return removed
    for entry in candidates:
        try:
            info = os.lstat(entry)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = os.open(entry / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # no lock file: starting, or an older pegboard's; not ours to judge
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live sandbox holds it
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
        finally:
            os.close(fd)
    return removed


def _watch(scratch: str) -> None:
    """The watchdog: follow +PGID/-PGID lines on stdin until EOF, then kill and remove."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups: dict[int, None] = {}
    for line in sys.stdin.buffer:
        text = line.strip().decode("ascii", "replace")
        if len(text) > 1 and text[1:].isdigit():
            pgid = int(text[1:])
            if text[0] == "+":
                groups[pgid] = None
            elif text[0] == "-":
                groups.pop(pgid, None)
    # A container the sandbox spawned just before it died may not be listed yet: Popen returns
    # (and the +PGID line is written) only when the parent thread runs again, and the container
    # can run, and the sandbox be killed, first. Its process still works inside the scratch
    # directory it was started in, so those groups go too.
    for pgid in {*groups, *_groups_working_in(scratch)}:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    shutil.rmtree(scratch, ignore_errors=True)


def _groups_working_in(scratch: str) -> set[int]:
    """Process groups of processes whose working directory is inside `scratch` (/proc)."""
    inside = os.path.realpath(scratch) + os.sep
    found: set[int] = set()
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd") + os.sep
            if cwd.startswith(inside):
                found.add(os.getpgid(int(pid)))
        except OSError:
            continue  # gone, or not ours to look at
    found.discard(os.getpgid(0))  # never the watchdog's own group
    return found


if __name__ == "__main__":
    _watch(sys.argv[1])

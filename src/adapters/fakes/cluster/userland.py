"""What runs when FakeCluster execs into a pod: one FakeHost per pod, no real processes.

Each pod has a FakeHost (files with modes and mtimes, command rules, scripted detached jobs) on
the cluster's clock, the same model FakeShell and FakeFileSync use. An exec'd argv is:

- one of pegboard's pod commands (`pegboard.adapters.pod_commands`, recognised only when its
  script is exactly what the builder makes of its params): done to the host's files and jobs;
- anything else: the host's command rules, matched against the argv as one shell-quoted line
  (`host.on_command(r"^nvidia-smi", stdout=...)`); a command no rule matches exits 0 silently,
  as FakeShell's do.

stdin is taken as the command would take it: a command told to read N bytes that gets fewer
waits for the rest, as it would over the exec protocol v4 (which cannot close stdin), until the
exec times out.
"""

from __future__ import annotations

import io
import math
import posixpath
import shlex
import stat
import tarfile
from collections.abc import Callable

import attrs

from pegboard.adapters import pod_commands
from pegboard.domain.errors import PegboardError

from ..shell import FakeHost

__all__ = ["ExecOutcome", "Program", "run_in_host"]

# A pod command's fake: (host, params, stdin) -> its outcome.
Program = Callable[[FakeHost, tuple[str, ...], bytes], "ExecOutcome"]


@attrs.frozen
class ExecOutcome:
    """What the command did: exit code, output, and how long it ran (math.inf: it never ends
    by itself, e.g. it waits for stdin that will not come)."""

    exit_code: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0
    error: PegboardError | None = None


def run_in_host(host: FakeHost, argv: list[str], stdin: bytes) -> ExecOutcome:
    """Run `argv` on the pod's host (see the module docstring)."""
    command = pod_commands.parse(argv)
    if command is not None and command.name in PROGRAMS:
        return PROGRAMS[command.name](host, command.params, stdin)
    line = shlex.join(argv)
    host.commands.append(line)
    return _by_rule(host, line)


def _by_rule(host: FakeHost, command: str) -> ExecOutcome:
    rule = host.match(command)
    if rule is None:
        return ExecOutcome()
    return ExecOutcome(rule.exit_code, rule.stdout, rule.stderr, rule.duration, rule.error)


def _stdin_of(stdin: bytes, size: int) -> bytes | None:
    """Exactly `size` bytes of stdin, or None when fewer came (the command keeps waiting)."""
    return stdin[:size] if len(stdin) >= size else None


def _run(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    command, timeout, stdin_size, _cwd = params
    host.commands.append(command)
    size = int(stdin_size)
    if size >= 0 and _stdin_of(stdin, size) is None:
        return ExecOutcome(duration=math.inf)
    outcome = _by_rule(host, command)
    limit = float(timeout)
    if outcome.error is None and outcome.duration > limit:
        return ExecOutcome(124, duration=limit)  # what `timeout` reports when it had to kill
    return outcome


def _read(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    path, offset, limit = params
    host.advance_jobs()
    if host.resolve(path) not in host.files:
        if host.is_dir(path):
            return ExecOutcome(pod_commands.NOT_A_FILE, stderr=b"is a directory\n")
        return ExecOutcome(pod_commands.NO_SUCH_FILE)
    data = host.read(path)[int(offset) :]
    return ExecOutcome(stdout=data[: int(limit)] if limit else data)


def _write(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    path, mode, size = params
    if host.is_dir(path):
        return ExecOutcome(pod_commands.NOT_A_FILE, stderr=b"is a directory\n")
    parent = host.resolve(path).rpartition("/")[0]
    while parent:
        if parent in host.files:
            return ExecOutcome(1, stderr=f"mkdir: cannot create {parent}: File exists\n".encode())
        parent = parent.rpartition("/")[0]
    data = _stdin_of(stdin, int(size))
    if data is None:
        return ExecOutcome(duration=math.inf)
    host.put(path, data, int(mode, 8))
    return ExecOutcome()


def _detach(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    script, log, status, pid_file = params
    host.commands.append(f"<start_detached {script}>")
    pid = host.start_job(script, log, status, pid_file)
    return ExecOutcome(stdout=f"{pid}\n".encode())


def _status(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    pid_path, status_path = params
    host.advance_jobs()
    status = host.files.get(host.resolve(status_path))
    if status is not None:
        return ExecOutcome(stdout=status.data)
    pid_file = host.files.get(host.resolve(pid_path))
    pid = int(pid_file.data.decode().strip()) if pid_file else None
    alive = any(run.pid == pid and not run.finished for run in host.jobs)
    return ExecOutcome(stdout=b"RUNNING\n" if alive else b"GONE\n")


def _tree(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    """`find -exec stat` of a FakeHost path (pod_commands.TREE_STAT_FORMAT, one batch): its
    files, and the directories their paths imply."""
    path, max_depth = params
    root = host.resolve(path)
    found: list[tuple[int, int, float, str]] = []  # raw mode, size, mtime, name as find prints it
    if root in host.files:
        file = host.files[root]
        found.append((stat.S_IFREG | file.mode, len(file.data), file.mtime, path))
    elif not host.is_dir(root):
        return ExecOutcome(pod_commands.NO_SUCH_FILE)
    else:
        found.append((stat.S_IFDIR | 0o755, 4096, 0.0, path))
    dirs: set[str] = set()
    prefix = root.rstrip("/") + "/"
    shown = path if path.endswith("/") else path + "/"
    for name in sorted(host.files) if max_depth != "0" and host.is_dir(root) else ():
        if not name.startswith(prefix):
            continue
        rel = name[len(prefix) :]
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in dirs:
                dirs.add(parent)
                found.append((stat.S_IFDIR | 0o755, 4096, 0.0, shown + parent))
        file = host.files[name]
        found.append((stat.S_IFREG | file.mode, len(file.data), file.mtime, shown + rel))
    lines = b"".join(b"%x %d %d\n" % (mode, size, int(mtime)) for mode, size, mtime, _ in found)
    names = b"".join(name.encode() + b"\0\0" for *_, name in found)
    return ExecOutcome(stdout=lines + b"\0" + names)


def _untar(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    """`tar -x` into a FakeHost: regular files with their modes and mtimes (directories are
    implied by paths; links are not modelled), of the `size` bytes of stdin: fewer wait."""
    root, size = params
    data = _stdin_of(stdin, int(size))
    if data is None:
        return ExecOutcome(duration=math.inf)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        for member in archive:
            if not member.isreg():
                continue
            source = archive.extractfile(member)
            assert source is not None
            path = posixpath.join(root, member.name)
            host.put(path, source.read(), member.mode)
            host.files[host.resolve(path)].mtime = float(member.mtime)
    return ExecOutcome()


def _names(stdin: bytes, size: str) -> list[str] | None:
    data = _stdin_of(stdin, int(size))
    return None if data is None else [n.decode() for n in data.split(b"\0") if n]


def _tar(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    """`xargs -0 tar -c --no-recursion` of the named FakeHost files (GNU tar: a missing one is
    reported and the rest still archived, exit 2, which xargs reports as 123)."""
    root, size = params
    names = _names(stdin, size)
    if names is None:
        return ExecOutcome(duration=math.inf)
    buffer = io.BytesIO()
    errors = []
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name in names:
            path = host.resolve(posixpath.join(root, name))
            found = host.files.get(path)
            if found is None:
                if not host.is_dir(path):
                    errors.append(f"tar: {name}: Cannot stat: No such file or directory\n")
                continue
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(found.data), found.mode, int(found.mtime)
            archive.addfile(info, io.BytesIO(found.data))
    return ExecOutcome(123 if errors else 0, buffer.getvalue(), "".join(errors).encode())


def _remove(host: FakeHost, params: tuple[str, ...], stdin: bytes) -> ExecOutcome:
    """`rm -rf` of the named FakeHost paths and everything under them."""
    root, size = params
    names = _names(stdin, size)
    if names is None:
        return ExecOutcome(duration=math.inf)
    for name in names:
        path = host.resolve(posixpath.join(root, name))
        for stored in [f for f in host.files if f == path or f.startswith(path + "/")]:
            del host.files[stored]
    return ExecOutcome()


PROGRAMS: dict[str, Program] = {
    "run": _run,
    "read": _read,
    "write": _write,
    "detach": _detach,
    "status": _status,
    "tree": _tree,
    "untar": _untar,
    "tar": _tar,
    "remove": _remove,
}

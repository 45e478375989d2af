"""The commands ExecShell and TarFileSync exec in a pod, as argv, and how to recognise them.

Each is `sh -c SCRIPT pegboard-NAME PARAM...`: SCRIPT is built from the params (quoted, by the
same builders LocalShell and SshShell use where one exists), and the params follow it as
arguments the script ignores. So a real pod just runs the script, and FakeCluster's userland,
which has no shell, reads NAME and the params, checks that SCRIPT is what the builder makes of
them (a command it does not know is never guessed at), and does the same thing to its in-memory
files.

The scripts are POSIX sh over utilities GNU coreutils/findutils/tar and busybox both have, with
the options both take (busybox 1.35 as Debian and Alpine build it: its find has no -printf, its
tar no --null and, in Debian's build, no -T): an alpine image without bash can be synced. Only
`run` and `detach` need bash, for the command they are given (a job's script is bash).

A command that reads stdin reads exactly the bytes it was told (`head -c N`): over the exec
protocol v4.channel.k8s.io stdin cannot be closed, so nothing may wait for end-of-input (busybox
tar reads its input to the end, past the end-of-archive blocks).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

import attrs

from pegboard.domain.gpujob.remote_commands import detach_command, detached_status_command
from pegboard.domain.ports.cluster import Cluster, ExecInput, ExecResult, OutputSink

__all__ = [
    "NOT_A_FILE",
    "NO_SUCH_FILE",
    "TREE_STAT_FORMAT",
    "PodCommand",
    "PodTarget",
    "build",
    "detach",
    "detached_status",
    "parse",
    "read_file",
    "remove",
    "run",
    "tar",
    "tree",
    "untar",
    "write_file",
]

NO_SUCH_FILE = 3  # exit status of a read of a path that does not exist
NOT_A_FILE = 4  # exit status of a read or write of a path that is a directory
_ARG0 = "pegboard-"
_SHELL = ("sh", "-c")


@attrs.frozen
class PodCommand:
    """One recognised command: its name and params, as the argv carried them."""

    name: str
    params: tuple[str, ...]


@attrs.frozen
class PodTarget:
    """The container these commands run in, and the exec that runs them there."""

    cluster: Cluster
    namespace: str
    pod: str
    container: str | None = None

    @property
    def where(self) -> str:
        where = f"{self.namespace}/{self.pod}"
        return f"{where}/{self.container}" if self.container else where

    def exec(
        self,
        argv: list[str],
        *,
        timeout: float,
        stdin: ExecInput = None,
        on_stdout: OutputSink | None = None,
        on_stderr: OutputSink | None = None,
    ) -> ExecResult:
        return self.cluster.exec(
            self.pod,
            argv,
            namespace=self.namespace,
            container=self.container,
            stdin=stdin,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            timeout=timeout,
        )


def _run_script(command: str, timeout: str, stdin_size: str, cwd: str) -> str:
    # `timeout` (coreutils, busybox) runs the command in its own process group and signals the
    # whole group when the time is up (exit 124; 137 when it had to SIGKILL), because an exec
    # connection that ends does not kill anything in the container.
    q = shlex.quote
    cd = f"cd -- {q(cwd)} && " if cwd else ""
    inner = f"timeout -k 2 {q(timeout)} bash --norc --noprofile -c {q(command)}"
    feed = f"head -c {int(stdin_size)} | " if int(stdin_size) >= 0 else ""
    tail = "" if feed else " < /dev/null"
    return f"{cd}{feed}{inner}{tail}"


def _read_script(path: str, offset: str, limit: str) -> str:
    q = shlex.quote(path)
    script = (
        f"[ -d {q} ] && {{ echo 'is a directory' >&2; exit {NOT_A_FILE}; }}; "
        f"[ -f {q} ] || exit {NO_SUCH_FILE}; tail -c +{int(offset) + 1} -- {q}"
    )
    return script + (f" | head -c {int(limit)}" if limit else "")


def _write_script(path: str, mode: str, size: str) -> str:
    q = shlex.quote(path)
    parent = path.rstrip("/").rpartition("/")[0] or "/"
    name = path.rstrip("/").rpartition("/")[2]
    staged = shlex.quote(f"{parent.rstrip('/')}/.{name}.pegboard-")
    # mktemp makes the staged file 0600 (umask 077 besides): its final mode is set before the
    # first byte, so a secret never exists with wider permissions; then renamed into place.
    return (
        f"[ -d {q} ] && {{ echo 'is a directory' >&2; exit {NOT_A_FILE}; }}; "
        f"umask 077 && mkdir -p -- {shlex.quote(parent)} && t=$(mktemp {staged}XXXXXXXX) && "
        f'{{ chmod {int(mode, 8) & 0o7777:o} "$t" && head -c {int(size)} > "$t" && '
        f'[ "$(wc -c < "$t")" -eq {int(size)} ] && mv -f -- "$t" {q}; }} '
        f'|| {{ rc=$?; rm -f -- "$t"; exit $rc; }}'
    )


def _detach_script(script: str, log: str, status: str, pid: str) -> str:
    return detach_command(script_path=script, log_path=log, status_path=status, pid_path=pid)


def _status_script(pid: str, status: str) -> str:
    return detached_status_command(pid_path=pid, status_path=status)


# What `tree` prints, in batches (find -exec ... {} + runs one shell a batch of paths): one
# field holding a `stat -c TREE_STAT_FORMAT` line a path (raw mode in hex, size, mtime in
# seconds: numbers only, so the lines are unambiguous), then two fields a path, in the same
# order: the path as find printed it, and its link target ("" when it is not a link). Every
# field ends in a NUL. stat -c and readlink are in GNU coreutils and busybox; -printf is not.
TREE_STAT_FORMAT = "%f %s %Y"
_TREE_BATCH = (
    f"stat -c '{TREE_STAT_FORMAT}' -- \"$@\" || exit; printf '\\0'; "
    'for f in "$@"; do if [ -L "$f" ]; then l=$(readlink -- "$f") || exit; else l=; fi; '
    'printf \'%s\\0%s\\0\' "$f" "$l"; done'
)


def _tree_script(path: str, max_depth: str) -> str:
    q = shlex.quote(path)
    depth = f" -maxdepth {int(max_depth)}" if max_depth else ""
    return (
        f"{{ [ -e {q} ] || [ -L {q} ]; }} || exit {NO_SUCH_FILE}; "
        f"find {q}{depth} -exec sh -c {shlex.quote(_TREE_BATCH)} sh {{}} +"
    )


def _untar_script(root: str, size: str) -> str:
    # --no-same-owner: the files belong to whoever execs, whatever the archive says.
    q = shlex.quote(root)
    return f"mkdir -p -- {q} && cd -- {q} && head -c {int(size)} | tar -x -p --no-same-owner -f -"


def _tar_script(root: str, list_size: str) -> str:
    # xargs may run tar more than once (a long list): the archives follow each other, each
    # with its end-of-archive blocks, and the reader skips those (tarfile's ignore_zeros).
    q = shlex.quote(root)
    return f"cd -- {q} && head -c {int(list_size)} | xargs -0 tar -c -f - --no-recursion --"


def _remove_script(root: str, list_size: str) -> str:
    q = shlex.quote(root)
    return f"cd -- {q} && head -c {int(list_size)} | xargs -0 rm -rf --"


_SCRIPTS: dict[str, Callable[..., str]] = {
    "run": _run_script,
    "read": _read_script,
    "write": _write_script,
    "detach": _detach_script,
    "status": _status_script,
    "tree": _tree_script,
    "untar": _untar_script,
    "tar": _tar_script,
    "remove": _remove_script,
}


def build(name: str, *params: str) -> list[str]:
    """The argv of command `name` with `params`."""
    return [*_SHELL, _SCRIPTS[name](*params), _ARG0 + name, *params]


def parse(argv: Sequence[str]) -> PodCommand | None:
    """The command `argv` is, when it is one of these and its script matches its params."""
    head = len(_SHELL)
    if tuple(argv[:head]) != _SHELL or len(argv) < head + 2:
        return None
    script, arg0, params = argv[head], argv[head + 1], tuple(argv[head + 2 :])
    name = arg0.removeprefix(_ARG0)
    builder = _SCRIPTS.get(name) if arg0.startswith(_ARG0) else None
    if builder is None:
        return None
    try:
        if builder(*params) != script:
            return None
    except (TypeError, ValueError):
        return None
    return PodCommand(name, params)


def run(command: str, *, timeout: float, stdin_size: int | None, cwd: str | None) -> list[str]:
    """`command` under bash, killed with its process group after `timeout` seconds; reading
    exactly `stdin_size` bytes of stdin (None: stdin is /dev/null)."""
    size = -1 if stdin_size is None else stdin_size
    return build("run", command, f"{timeout:g}", str(size), cwd or "")


def read_file(path: str, *, offset: int, limit: int | None) -> list[str]:
    """Print the file from `offset`, at most `limit` bytes; exit NO_SUCH_FILE / NOT_A_FILE."""
    return build("read", path, str(offset), "" if limit is None else str(limit))


def write_file(path: str, *, mode: int, size: int) -> list[str]:
    """Replace `path` with the `size` bytes of stdin, mode set before the first byte."""
    return build("write", path, f"{mode & 0o7777:o}", str(size))


def detach(*, script: str, log: str, status: str, pid: str) -> list[str]:
    """Start `bash script` detached (remote_commands.detach_command); prints its pid."""
    return build("detach", script, log, status, pid)


def detached_status(*, pid: str, status: str) -> list[str]:
    """Print the exit status, RUNNING or GONE (remote_commands.detached_status_command)."""
    return build("status", pid, status)


def tree(path: str, *, max_depth: int | None = None) -> list[str]:
    """List `path` and what is under it (`max_depth` levels; 0: `path` alone), in the batches
    described at TREE_STAT_FORMAT, each name as find prints it under `listed_as(path)`; exit
    NO_SUCH_FILE when it does not exist."""
    return build("tree", listed_as(path), "" if max_depth is None else str(max_depth))


def listed_as(path: str) -> str:
    """`path` as `tree` hands it to find: a relative path starting with `-` as `./-...`, which
    find would otherwise read as an expression (find has no `--` for its starting points)."""
    return f"./{path}" if path.startswith("-") else path


def untar(root: str, *, size: int) -> list[str]:
    """Extract the tar archive of `size` bytes on stdin into `root` (created), modes and
    mtimes kept."""
    return build("untar", root, str(size))


def tar(root: str, *, list_size: int) -> list[str]:
    """A tar archive on stdout of the paths (relative to `root`, NUL-ended, `list_size` bytes
    of stdin) named, each without what is under it."""
    return build("tar", root, str(list_size))


def remove(root: str, *, list_size: int) -> list[str]:
    """`rm -rf` the paths (relative to `root`, NUL-ended, `list_size` bytes of stdin)."""
    return build("remove", root, str(list_size))

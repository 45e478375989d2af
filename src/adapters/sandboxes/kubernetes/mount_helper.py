"""Run a container's process with its volumes mounted at their mountPaths (a script: run as
`unshare --mount --propagation private -- python -I -S mount_helper.py start PLAN -- argv...`,
or `nsenter --target PID --mount -- python -I -S mount_helper.py exec ROOT:WORKDIR -- argv...`
to join a running container: the helper runs from the host's root, which the namespace still
holds, then chroots, so a volume mounted over the interpreter's path cannot hide it). Standard library only.

`start` builds the container's root in a private mount namespace: a directory whose entries are
the host's own (bind-mounted, recursively), except along the paths to the volumes, where real
directories are made one level at a time, so a volume at /workspace is the pod's own directory
while /usr, /tmp, /proc, ... are the host's. Then it chroots there, changes to the working
directory and execs the command. Nothing is mounted outside the new namespace, and it all goes
when the namespace's last process exits.

What went wrong before the exec is written to the descriptor named by PEGBOARD_ERROR_FD (closed
on a successful exec), and the exit code is 128: the simulated kubelet turns it into a
StartError, an exec session into the runtime's "exec failed".
"""

from __future__ import annotations

import errno
import os
import sys

_MS_RDONLY = 1
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384


_libc: list[object] = []  # the C library, loaded by the first mount


def _mount(source: str, target: str, flags: int) -> None:
    # ctypes (and json) load only for `start`: an exec (every exec into a container with a
    # volume) only chroots, changes directory and execs; the two imports were about half of
    # the helper's start (14 vs 31 ms a run of `python -I -S`, measured under load).
    import ctypes

    if not _libc:
        _libc.append(ctypes.CDLL(None, use_errno=True))
    libc: ctypes.CDLL = _libc[0]  # type: ignore[assignment]
    if libc.mount(source.encode(), target.encode(), None, flags, None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {source} on {target}: {os.strerror(code)}")


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _populate(root: str, directory: str, expanded: set[str], targets: set[str]) -> None:
    """Give root/directory the host directory's entries: bind mounts of its subdirectories and
    files, copies of its symlinks; the expanded ones (ancestors of a mount) recursively."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        entries = []
    # The entry holding the new root goes first: bound later, it would carry those mounts along.
    entries.sort(key=lambda e: not (root + "/").startswith(e.path.rstrip("/") + "/"))
    for entry in entries:
        path = entry.path
        inner = _inside(root, path)
        if path in expanded:
            os.makedirs(inner, exist_ok=True)
            _populate(root, path, expanded, targets)
        elif path in targets:
            continue
        elif entry.is_symlink():
            os.symlink(os.readlink(path), inner)
        elif entry.is_dir():
            os.makedirs(inner, exist_ok=True)
            _mount(path, inner, _MS_BIND | _MS_REC)
        elif entry.is_file():
            with open(inner, "a"):
                pass
            _mount(path, inner, _MS_BIND)


def start(plan: dict) -> None:  # type: ignore[type-arg]
    root = plan["root"]
    mounts = plan["mounts"]  # [{path, source, readOnly}], parents before children
    targets = {m["path"] for m in mounts}
    expanded = set(plan["expanded"])
    os.makedirs(root, exist_ok=True)
    _populate(root, "/", expanded, targets)
    for path in sorted(expanded, key=len):  # expanded paths the host does not have
        os.makedirs(_inside(root, path), exist_ok=True)
    for mount in mounts:
        inner = _inside(root, mount["path"])
        os.makedirs(mount["source"], exist_ok=True)
        os.makedirs(inner, exist_ok=True)
        _mount(mount["source"], inner, _MS_BIND | _MS_REC)
        if mount.get("readOnly"):
            _mount(mount["source"], inner, _MS_BIND | _MS_REMOUNT | _MS_RDONLY)
    os.chroot(root)
    workdir = plan["workdir"]
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)


def _fail(message: str) -> None:
    fd = int(os.environ.get("PEGBOARD_ERROR_FD", "2"))
    os.write(fd, message.encode())
    os._exit(128)


def main(argv: list[str]) -> None:
    mode, setting, separator, *command = argv
    if separator != "--" or not command:
        _fail(f"mount_helper: usage: start PLAN|exec WORKDIR -- argv (got {argv!r})")
    try:
        if mode == "start":
            import json

            start(json.loads(setting))
        else:
            root, _, workdir = setting.partition(":")
            os.chroot(root)
            os.chdir(workdir)
    except OSError as exc:
        _fail(f"failed to set up the container's mounts: {exc}")
    error_fd = os.environ.pop("PEGBOARD_ERROR_FD", None)
    if error_fd is not None:
        os.set_inheritable(int(error_fd), False)  # closed by the exec: "started"
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        reason = "no such file or directory" if exc.errno == errno.ENOENT else exc.strerror
        if error_fd is not None:
            os.environ["PEGBOARD_ERROR_FD"] = error_fd
        _fail(f'exec: "{command[0]}": {reason}')


if __name__ == "__main__":
    main(sys.argv[1:])

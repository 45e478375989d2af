"""LocalFileSync: the FileSync port between this machine and a local pod's directory.

Uses the local `rsync` (-rlpt, excludes, --delete only when asked, --stats parsed for the bytes
and files transferred) and falls back to a pure-Python copy with the same semantics when rsync
is not installed. Pod paths map into the pod's fs/ directory (LocalPodPaths).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pegboard.adapters.local_pod_paths import LocalPodPaths
from pegboard.adapters.push_checks import check_source, checked_chmod
from pegboard.domain.errors import PortError
from pegboard.domain.ports.file_sync import TransferResult
from pegboard.domain.sync_rules import ExcludeMatcher, parse_chmod

logger = logging.getLogger(__name__)

_DEFAULT_TIMEOUT_SEC = 3600.0
_FILES_RE = re.compile(r"Number of regular files transferred:\s*([\d,.]+)")
_BYTES_RE = re.compile(r"Total transferred file size:\s*([\d,.]+)")


class LocalFileSync:
    """rsync (or a pure-Python copy) between this machine and one local pod."""

    def __init__(self, paths: LocalPodPaths, *, rsync: str | None = "auto") -> None:
        self._paths = paths
        self._rsync = shutil.which("rsync") if rsync == "auto" else rsync

    @property
    def uses_rsync(self) -> bool:
        return self._rsync is not None

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
        return self._transfer(
            local,
            self._host(remote),
            excludes=excludes,
            delete=delete,
            chmod=chmod,
            timeout=timeout,
            source_label=local,
            into_pod=True,
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
        return self._transfer(
            self._host(remote),
            local,
            excludes=excludes,
            delete=delete,
            chmod=None,
            timeout=timeout,
            source_label=remote,
        )

    def _transfer(
        self,
        source: str,
        dest: str,
        *,
        excludes: Sequence[str],
        delete: bool,
        chmod: str | None,
        timeout: float | None,
        source_label: str,
        into_pod: bool = False,
    ) -> TransferResult:
        check_source(source, label=source_label)
        checked_chmod(chmod)
        into_dir = os.path.isdir(source.rstrip("/") or "/") or dest.endswith("/")
        if into_pod:  # never the pod's own directory: a pod deleted meanwhile stays deleted
            try:
                self._paths.make_dirs(Path(dest) if into_dir else Path(dest).parent)
            except OSError as exc:
                raise PortError(f"cannot create {dest}: {exc.strerror or exc}") from None
        else:
            prepare_destination(dest, into_dir=into_dir)
        if self._rsync is None:
            try:
                return copy_tree(source, dest, excludes=excludes, delete=delete, chmod=chmod)
            except OSError as exc:  # the port raises PortErrors only
                raise PortError(f"copy to {dest} failed: {exc.strerror or exc}") from None
        argv = [self._rsync, "-rlpt", "--stats"]
        if delete:
            argv.append("--delete")
        if chmod:
            argv.append(f"--chmod={chmod}")
        argv += [f"--exclude={pattern}" for pattern in excludes]
        argv += ["--", source, dest]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=timeout or _DEFAULT_TIMEOUT_SEC, check=False
            )
        except subprocess.TimeoutExpired:
            raise PortError(f"rsync timed out after {timeout or _DEFAULT_TIMEOUT_SEC:g}s") from None
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip()[-500:]
            raise PortError(f"rsync exited {done.returncode}: {message}", status=done.returncode)
        return parse_rsync_stats(done.stdout.decode(errors="replace"))

    def _host(self, pod_path: str) -> str:
        try:
            return self._paths.to_host(pod_path)
        except ValueError as exc:
            raise PortError(str(exc)) from None


def parse_rsync_stats(output: str) -> TransferResult:
    """bytes_transferred and files from `rsync --stats` output (0 when a line is missing)."""

    def number(regex: re.Pattern[str]) -> int:
        match = regex.search(output)
        return int(re.sub(r"[,.]", "", match.group(1))) if match else 0

    return TransferResult(bytes_transferred=number(_BYTES_RE), files=number(_FILES_RE))


def prepare_destination(dest: str, *, into_dir: bool) -> None:
    """Create the local directories rsync would not create itself: `dest` when the transfer
    goes into it, else its parent. PortError (the port's only error) when they cannot be."""
    try:
        (Path(dest) if into_dir else Path(dest).parent).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PortError(f"cannot create {dest}: {exc.strerror or exc}") from None


def copy_tree(
    source: str,
    dest: str,
    *,
    excludes: Sequence[str] = (),
    delete: bool = False,
    chmod: str | None = None,
) -> TransferResult:
    """Pure-Python rsync -rlpt: same trailing-slash, exclude, delete and skip-unchanged rules."""
    modes = parse_chmod(chmod) if chmod else None
    matcher = ExcludeMatcher(excludes)
    src = source.rstrip("/") or "/"
    if not os.path.isdir(src) or os.path.islink(src):
        target = os.path.join(dest, os.path.basename(src)) if os.path.isdir(dest) else dest
        if matcher.excluded(os.path.basename(src), is_dir=False):
            return TransferResult(bytes_transferred=0, files=0)
        changed = _copy_entry(src, target, modes.file_mode if modes else None)
        return TransferResult(bytes_transferred=changed or 0, files=0 if changed is None else 1)
    root = dest if source.endswith("/") else os.path.join(dest, os.path.basename(src))
    total_bytes = 0
    total_files = 0
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = "" if rel_dir == "." else rel_dir
        kept_dirs = []
        for name in sorted(dirnames):
            rel = os.path.join(rel_dir, name)
            full = os.path.join(dirpath, name)
            if matcher.excluded(rel, is_dir=not os.path.islink(full)):
                continue
            if os.path.islink(full):
                filenames.append(name)  # symlinks to directories are copied as links
                continue
            kept_dirs.append(name)
        dirnames[:] = kept_dirs
        target_dir = os.path.join(root, rel_dir)
        with contextlib.suppress(FileExistsError):  # its parent is made already (top-down walk),
            os.mkdir(target_dir)  # so nothing above `dest` is ever made again
        seen.add(rel_dir)
        for name in sorted(filenames):
            rel = os.path.join(rel_dir, name)
            if matcher.excluded(rel, is_dir=False):
                continue
            seen.add(rel)
            changed = _copy_entry(
                os.path.join(dirpath, name),
                os.path.join(root, rel),
                modes.file_mode if modes else None,
            )
            if changed is not None:
                total_bytes += changed
                total_files += 1
        if modes is not None and modes.dir_mode is not None:
            os.chmod(target_dir, modes.dir_mode)
        else:
            shutil.copymode(dirpath, target_dir)
    if delete:
        delete_extraneous(root, seen, matcher)
    return TransferResult(bytes_transferred=total_bytes, files=total_files)


def _copy_entry(source: str, target: str, file_mode: int | None) -> int | None:
    """Copy one file or symlink; the bytes moved, or None when it was already up to date."""
    if os.path.islink(source):
        link = os.readlink(source)
        if os.path.islink(target) and os.readlink(target) == link:
            return None
        _remove(target)
        os.symlink(link, target)
        return 0
    src_stat = os.stat(source)
    try:
        dst_stat = os.lstat(target)
        if (
            stat.S_ISREG(dst_stat.st_mode)
            and dst_stat.st_size == src_stat.st_size
            and int(dst_stat.st_mtime) == int(src_stat.st_mtime)
        ):
            _apply_mode(target, src_stat.st_mode, file_mode)
            return None
        if not stat.S_ISREG(dst_stat.st_mode):
            _remove(target)
    except FileNotFoundError:
        pass
    _copy_file(source, target, file_mode)
    return src_stat.st_size


def _copy_file(source: str, target: str, file_mode: int | None) -> int:
    tmp = os.path.join(os.path.dirname(target) or ".", f".{os.path.basename(target)}.pgtmp")
    shutil.copyfile(source, tmp)
    src_stat = os.stat(source)
    os.utime(tmp, ns=(src_stat.st_atime_ns, src_stat.st_mtime_ns))
    _apply_mode(tmp, src_stat.st_mode, file_mode)
    os.replace(tmp, target)
    return src_stat.st_size


def _apply_mode(path: str, source_mode: int, file_mode: int | None) -> None:
    os.chmod(path, file_mode if file_mode is not None else stat.S_IMODE(source_mode))


def delete_extraneous(root: str, seen: set[str], matcher: ExcludeMatcher) -> None:
    """rsync --delete on a local tree: remove what the source did not have (`seen`)."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        for name in filenames + dirnames:
            rel = os.path.join(rel_dir, name)
            full = os.path.join(dirpath, name)
            is_dir = os.path.isdir(full) and not os.path.islink(full)
            # Like rsync without --delete-excluded: excluded files on the receiver are kept.
            if rel in seen or _under_excluded(rel, is_dir, matcher):
                continue
            _remove(full)


def _under_excluded(rel: str, is_dir: bool, matcher: ExcludeMatcher) -> bool:
    parts = rel.split(os.sep)
    for i in range(1, len(parts)):
        if matcher.excluded(os.sep.join(parts[:i]), is_dir=True):
            return True
    return matcher.excluded(rel, is_dir=is_dir)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)

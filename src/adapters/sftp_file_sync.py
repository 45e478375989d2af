"""SftpFileSync: the FileSync port over the run's SFTP session, for hosts without rsync.

Same semantics as rsync -rlpt (and LocalFileSync's copy_tree): a trailing "/" copies the
directory's contents, excludes as rsync patterns, files with the same size and mtime are
skipped, --delete only when asked (excluded files on the receiver are kept), --chmod specs,
symlinks copied as links, bytes and files transferred counted. Pushed files are written into a
private 0700 staging directory inside the destination with their final mode set before the
first byte, then renamed into place, so a secret never exists with wider permissions.
It rides the run's one SSH connection (no second login, unlike rsync's own ssh).
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pegboard.adapters.local_file_sync import delete_extraneous
from pegboard.adapters.push_checks import check_source, checked_chmod
from pegboard.adapters.ssh_connection import SftpUnavailable, SshConnection
from pegboard.adapters.ssh_errors import connection_lost
from pegboard.domain.errors import NotFound, PortError, Transient
from pegboard.domain.ports.file_sync import TransferResult
from pegboard.domain.sync_rules import ExcludeMatcher

if TYPE_CHECKING:
    from paramiko.sftp_attr import SFTPAttributes
    from paramiko.sftp_client import SFTPClient

_DEFAULT_TIMEOUT_SEC = 3600.0
_CHUNK = 32768
_T = TypeVar("_T")


class SftpFileSync:
    """rsync semantics over SFTP, on the run's SSH connection."""

    def __init__(self, connection: SshConnection) -> None:
        self._conn = connection

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
        check_source(local)
        modes = checked_chmod(chmod)
        file_mode = modes.file_mode if modes else None
        dir_mode = modes.dir_mode if modes else None
        transfer = _Transfer(self._conn.sftp(), timeout, ExcludeMatcher(excludes))
        return self._guarded(
            lambda: transfer.push(
                local, remote, delete=delete, file_mode=file_mode, dir_mode=dir_mode
            ),
            f"push {local}",
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
        transfer = _Transfer(self._conn.sftp(), timeout, ExcludeMatcher(excludes))
        return self._guarded(lambda: transfer.pull(remote, local, delete=delete), f"pull {remote}")

    def pulls_cheaper(self, remote: str, *, max_bytes: int) -> bool:
        """Whether pulling `remote` over this session beats starting rsync (its own process and
        SSH handshake): a regular file or link of at most `max_bytes`, or nothing at all (the
        same NotFound, sooner). A directory or a bigger file is rsync's (deltas, one stream),
        and so is everything on a host whose SFTP does not work."""
        if self._conn.sftp_unavailable is not None:
            return False

        def probe() -> bool:
            attr = _lstat(self._conn.sftp(), remote.rstrip("/") or "/")
            if attr is None:
                return True
            mode = attr.st_mode or 0
            if stat.S_ISLNK(mode):
                return not remote.endswith("/")
            return stat.S_ISREG(mode) and (attr.st_size or 0) <= max_bytes

        try:
            return self._guarded(probe, f"stat {remote}")
        except SftpUnavailable:
            return False  # said once by the connection; rsync carries it

    def _guarded(self, call: Callable[[], _T], doing: str) -> _T:
        try:
            with self._conn.sftp_lock:
                return call()
        except PortError:
            raise
        except FileNotFoundError as exc:
            raise NotFound(f"no such file or directory: {exc.filename or doing}") from None
        except Exception as exc:  # OSError, paramiko.SSHException, EOFError
            if not self._conn.alive:
                raise connection_lost(str(self._conn.target), doing) from None
            raise PortError(f"sftp {doing} failed: {exc}") from None


class _Transfer:
    def __init__(self, sftp: SFTPClient, timeout: float | None, matcher: ExcludeMatcher) -> None:
        self.sftp = sftp
        self.limit = timeout or _DEFAULT_TIMEOUT_SEC
        self.deadline = time.monotonic() + self.limit
        self.matcher = matcher
        self.bytes = 0
        self.files = 0

    def result(self) -> TransferResult:
        return TransferResult(bytes_transferred=self.bytes, files=self.files)

    def check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            raise Transient(f"sftp transfer timed out after {self.limit:g}s")

    def counted(self, changed: int | None) -> None:
        if changed is not None:
            self.bytes += changed
            self.files += 1

    # --- push ----------------------------------------------------------------------------

    def push(
        self, local: str, remote: str, *, delete: bool, file_mode: int | None, dir_mode: int | None
    ) -> TransferResult:
        src = local.rstrip("/") or "/"
        if not os.path.isdir(src) or os.path.islink(src):
            name = os.path.basename(src)
            if self.matcher.excluded(name, is_dir=False):
                return self.result()
            into_dir = remote.endswith("/") or _remote_is_dir(self.sftp, remote)
            target = posixpath.join(remote, name) if into_dir else remote
            parent = posixpath.dirname(target) or "/"
            _makedirs(self.sftp, parent)
            with self.staging(parent) as staging:
                self.counted(
                    self.push_entry(src, target, _lstat(self.sftp, target), file_mode, staging)
                )
            return self.result()
        root = (
            remote.rstrip("/")
            if local.endswith("/")
            else posixpath.join(remote, os.path.basename(src))
        )
        _makedirs(self.sftp, root or "/")
        seen: set[str] = set()
        with self.staging(root) as staging:
            for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
                rel_dir = os.path.relpath(dirpath, src)
                rel_dir = "" if rel_dir == "." else rel_dir
                kept = []
                for name in sorted(dirnames):
                    full = os.path.join(dirpath, name)
                    if self.matcher.excluded(
                        os.path.join(rel_dir, name), is_dir=not os.path.islink(full)
                    ):
                        continue
                    if os.path.islink(full):
                        filenames.append(name)  # a link to a directory is copied as a link
                        continue
                    kept.append(name)
                dirnames[:] = kept
                target_dir = posixpath.join(root, rel_dir) if rel_dir else root
                if rel_dir:
                    _ensure_dir(self.sftp, target_dir)
                seen.add(rel_dir)
                existing = {a.filename: a for a in self.sftp.listdir_attr(target_dir)}
                for name in sorted(filenames):
                    rel = os.path.join(rel_dir, name)
                    if self.matcher.excluded(rel, is_dir=False):
                        continue
                    seen.add(rel)
                    self.check_deadline()
                    self.counted(
                        self.push_entry(
                            os.path.join(dirpath, name),
                            posixpath.join(target_dir, name),
                            existing.get(name),
                            file_mode,
                            staging,
                        )
                    )
                wanted = (
                    dir_mode if dir_mode is not None else stat.S_IMODE(os.stat(dirpath).st_mode)
                )
                self.sftp.chmod(target_dir, wanted)
            if delete:
                self.delete_remote_extraneous(root, seen, skip=posixpath.basename(staging))
        return self.result()

    def push_entry(
        self,
        source: str,
        target: str,
        existing: SFTPAttributes | None,
        file_mode: int | None,
        staging: str,
    ) -> int | None:
        """Copy one file or link; the bytes moved, or None when it was already up to date."""
        existing_mode = existing.st_mode if existing is not None else None
        if os.path.islink(source):
            link = os.readlink(source)
            was_link = existing_mode is not None and stat.S_ISLNK(existing_mode)
            if was_link and self.sftp.readlink(target) == link:
                return None
            if existing_mode is not None:
                _remove_tree(self.sftp, target, existing_mode)
            self.sftp.symlink(link, target)
            return 0
        info = os.stat(source)
        mode = file_mode if file_mode is not None else stat.S_IMODE(info.st_mode)
        if (
            existing is not None
            and existing_mode is not None
            and stat.S_ISREG(existing_mode)
            and existing.st_size == info.st_size
            and existing.st_mtime is not None
            and int(existing.st_mtime) == int(info.st_mtime)
        ):
            if stat.S_IMODE(existing_mode) != mode:
                self.sftp.chmod(target, mode)
            return None
        staged = posixpath.join(staging, secrets.token_hex(8))
        with open(source, "rb") as reader, self.sftp.open(staged, "wb") as writer:
            writer.chmod(mode)  # the final mode, before the first byte
            writer.set_pipelined(True)
            while chunk := reader.read(_CHUNK):
                writer.write(chunk)
        self.sftp.utime(staged, (int(info.st_atime), int(info.st_mtime)))
        if existing_mode is not None and stat.S_ISDIR(existing_mode):
            _remove_tree(self.sftp, target, existing_mode)
        try:
            self.sftp.posix_rename(staged, target)
        except OSError:
            _remove_quietly(self.sftp, target)
            self.sftp.rename(staged, target)
        return info.st_size

    @contextmanager
    def staging(self, directory: str) -> Iterator[str]:
        """A private 0700 directory in `directory` (same filesystem: renames are atomic)."""
        path = posixpath.join(directory, f".pegboard-sync-{secrets.token_hex(4)}")
        self.sftp.mkdir(path, 0o700)
        try:
            self.sftp.chmod(path, 0o700)
            yield path
        finally:
            try:
                for name in self.sftp.listdir(path):
                    _remove_quietly(self.sftp, posixpath.join(path, name))
                self.sftp.rmdir(path)
            except OSError:
                pass

    def delete_remote_extraneous(self, root: str, seen: set[str], *, skip: str) -> None:
        def walk(rel_dir: str) -> None:
            here = posixpath.join(root, rel_dir) if rel_dir else root
            for attr in self.sftp.listdir_attr(here):
                if not rel_dir and attr.filename == skip:
                    continue
                rel = posixpath.join(rel_dir, attr.filename) if rel_dir else attr.filename
                mode = attr.st_mode or 0
                is_dir = stat.S_ISDIR(mode)
                if rel in seen:
                    if is_dir:
                        walk(rel)
                    continue
                if _under_excluded(rel, is_dir, self.matcher):
                    continue
                _remove_tree(self.sftp, posixpath.join(here, attr.filename), mode)

        walk("")

    # --- pull ----------------------------------------------------------------------------

    def pull(self, remote: str, local: str, *, delete: bool) -> TransferResult:
        src = remote.rstrip("/") or "/"
        top = _lstat(self.sftp, src)
        if top is None:
            raise NotFound(f"no such file or directory on the pod: {remote}")
        top_mode = top.st_mode or 0
        if not stat.S_ISDIR(top_mode):
            name = posixpath.basename(src)
            if self.matcher.excluded(name, is_dir=False):
                return self.result()
            into_dir = local.endswith("/") or os.path.isdir(local)
            target = os.path.join(local, name) if into_dir else local
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            self.counted(self.pull_entry(src, top, target))
            return self.result()
        root = local if remote.endswith("/") else os.path.join(local, posixpath.basename(src))
        Path(root).mkdir(parents=True, exist_ok=True)
        seen: set[str] = set()

        def walk(rel_dir: str, mode: int) -> None:
            here = posixpath.join(src, rel_dir) if rel_dir else src
            target_dir = os.path.join(root, rel_dir)
            os.makedirs(target_dir, exist_ok=True)
            seen.add(rel_dir)
            for attr in sorted(self.sftp.listdir_attr(here), key=lambda a: a.filename):
                rel = os.path.join(rel_dir, attr.filename)
                entry_mode = attr.st_mode or 0
                is_dir = stat.S_ISDIR(entry_mode)
                if self.matcher.excluded(rel, is_dir=is_dir):
                    continue
                if is_dir:
                    walk(rel, entry_mode)
                    continue
                seen.add(rel)
                self.check_deadline()
                self.counted(
                    self.pull_entry(
                        posixpath.join(here, attr.filename), attr, os.path.join(root, rel)
                    )
                )
            os.chmod(target_dir, stat.S_IMODE(mode))

        walk("", top_mode)
        if delete:
            delete_extraneous(root, seen, self.matcher)
        return self.result()

    def pull_entry(self, source: str, attr: SFTPAttributes, target: str) -> int | None:
        mode = attr.st_mode or 0
        if stat.S_ISLNK(mode):
            link = self.sftp.readlink(source) or ""
            if os.path.islink(target) and os.readlink(target) == link:
                return None
            _remove_local(target)
            os.symlink(link, target)
            return 0
        size = attr.st_size or 0
        mtime = int(attr.st_mtime or 0)
        try:
            local = os.lstat(target)
            if (
                stat.S_ISREG(local.st_mode)
                and local.st_size == size
                and int(local.st_mtime) == mtime
            ):
                os.chmod(target, stat.S_IMODE(mode))
                return None
            if not stat.S_ISREG(local.st_mode):
                _remove_local(target)
        except FileNotFoundError:
            pass
        tmp = os.path.join(os.path.dirname(target) or ".", f".{os.path.basename(target)}.pgtmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as writer, self.sftp.open(source, "rb") as reader:
            reader.prefetch(size)
            while chunk := reader.read(_CHUNK):
                writer.write(chunk)
        os.utime(tmp, (int(attr.st_atime or mtime), mtime))
        os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, target)
        return size


def _lstat(sftp: SFTPClient, path: str) -> SFTPAttributes | None:
    try:
        return sftp.lstat(path)
    except FileNotFoundError:
        return None


def _remote_is_dir(sftp: SFTPClient, path: str) -> bool:
    try:
        mode = sftp.stat(path).st_mode
    except OSError:
        return False
    return mode is not None and stat.S_ISDIR(mode)


def _makedirs(sftp: SFTPClient, path: str) -> None:
    missing: list[str] = []
    current = path.rstrip("/") or "/"
    while current not in ("", "/") and not _remote_is_dir(sftp, current):
        missing.append(current)
        current = posixpath.dirname(current)
    for directory in reversed(missing):
        _ensure_dir(sftp, directory)


def _ensure_dir(sftp: SFTPClient, path: str) -> None:
    attr = _lstat(sftp, path)
    if attr is not None and stat.S_ISDIR(attr.st_mode or 0):
        return
    if attr is not None:
        _remove_tree(sftp, path, attr.st_mode or 0)
    sftp.mkdir(path)


def _remove_tree(sftp: SFTPClient, path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        for attr in sftp.listdir_attr(path):
            _remove_tree(sftp, posixpath.join(path, attr.filename), attr.st_mode or 0)
        sftp.rmdir(path)
    else:
        sftp.remove(path)


def _remove_quietly(sftp: SFTPClient, path: str) -> None:
    try:
        sftp.remove(path)
    except OSError:
        pass


def _remove_local(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _under_excluded(rel: str, is_dir: bool, matcher: ExcludeMatcher) -> bool:
    parts = rel.split("/")
    for i in range(1, len(parts)):
        if matcher.excluded("/".join(parts[:i]), is_dir=True):
            return True
    return matcher.excluded(rel, is_dir=is_dir)

"""FakeFileSync: the FileSync port between the real local disk and a FakeHost's files.

Same rules as rsync (trailing "/", excludes, delete only when asked, unchanged files skipped),
so the use case's staging and artifact pulls can be tested without a pod. Every transfer is
recorded in `transfers`; `sync.fail_next("push"|"pull", error, times=, when=)` (or the host's)
injects a failure.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from pegboard.adapters.fakes.failures import FailsOnDemand, FakeCall, InjectedFailures
from pegboard.adapters.fakes.shell import SYNC_OPERATIONS, FakeFile, FakeHost
from pegboard.adapters.push_checks import check_source, checked_chmod
from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.ports.file_sync import TransferResult
from pegboard.domain.sync_rules import ExcludeMatcher

__all__ = [
    "FakeFileSync",
    "Transfer",
]


@dataclass(frozen=True)
class Transfer:
    direction: str  # "push" or "pull"
    source: str
    destination: str
    excludes: tuple[str, ...]
    delete: bool
    chmod: str | None
    result: TransferResult


class FakeFileSync(FailsOnDemand[FakeCall]):
    """Copies between this machine's files and the fake pod's in-memory files (fail_next: its
    host's, for `push` with args (local, remote) and `pull` with args (remote, local))."""

    fail_operations = SYNC_OPERATIONS

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.transfers: list[Transfer] = []

    def _injected(self) -> InjectedFailures[FakeCall]:
        return self.host.failures

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
        self.host.take_failure("push", local, remote)
        source = local.rstrip("/") or "/"
        check_source(local)
        modes = checked_chmod(chmod)
        file_mode = modes.file_mode if modes else None
        matcher = ExcludeMatcher(excludes)
        entries: dict[str, tuple[bytes, int, float]] = {}
        if os.path.isdir(source):
            for dirpath, dirnames, filenames in os.walk(source):
                rel_dir = os.path.relpath(dirpath, source)
                rel_dir = "" if rel_dir == "." else rel_dir
                dirnames[:] = sorted(
                    d
                    for d in dirnames
                    if not matcher.excluded(posixpath.join(rel_dir, d), is_dir=True)
                )
                for name in sorted(filenames):
                    rel = posixpath.join(rel_dir, name)
                    if not matcher.excluded(rel, is_dir=False):
                        entries[rel] = _read_local(os.path.join(dirpath, name))
            root = (
                remote
                if local.endswith("/")
                else posixpath.join(remote, posixpath.basename(source))
            )
        else:
            if matcher.excluded(os.path.basename(source), is_dir=False):
                return self._record("push", local, remote, excludes, delete, chmod, 0, 0)
            root, name = _file_target(self.host, remote, os.path.basename(source))
            entries[name] = _read_local(source)
        moved = files = 0
        full_root = self.host.resolve(root)
        for rel, (data, mode, mtime) in entries.items():
            path = posixpath.join(full_root, rel)
            current = self.host.files.get(path)
            final_mode = file_mode if file_mode is not None else mode
            if current is not None and current.data == data:
                current.mode = final_mode
                continue
            self.host.files[path] = FakeFile(data, final_mode, mtime)
            moved += len(data)
            files += 1
        if delete and os.path.isdir(source):
            for path in [p for p in self.host.files if p.startswith(full_root.rstrip("/") + "/")]:
                rel = path[len(full_root.rstrip("/")) + 1 :]
                if rel not in entries and not _excluded_any(matcher, rel):
                    del self.host.files[path]
        return self._record("push", local, remote, excludes, delete, chmod, moved, files)

    def pull(
        self,
        remote: str,
        local: str,
        *,
        excludes: Sequence[str] = (),
        delete: bool = False,
        timeout: float | None = None,
    ) -> TransferResult:
        self.host.take_failure("pull", remote, local)
        try:
            return self._pull(remote, local, excludes=excludes, delete=delete)
        except OSError as exc:  # the local disk's error, as the real adapters report it
            raise PortError(f"pull into {local} failed: {exc.strerror or exc}") from None

    def _pull(
        self, remote: str, local: str, *, excludes: Sequence[str], delete: bool
    ) -> TransferResult:
        self.host.advance_jobs()
        source = self.host.resolve(remote)
        matcher = ExcludeMatcher(excludes)
        moved = files = 0
        if source in self.host.files:
            target = (
                os.path.join(local, posixpath.basename(source))
                if os.path.isdir(local) or local.endswith("/")
                else local
            )
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            if not matcher.excluded(posixpath.basename(source), is_dir=False):
                moved, files = _write_local(target, self.host.files[source])
            return self._record("pull", remote, local, excludes, delete, None, moved, files)
        if not self.host.is_dir(source):
            raise NotFound(f"no such file or directory on the pod: {remote}")
        root = local if remote.endswith("/") else os.path.join(local, posixpath.basename(source))
        os.makedirs(root, exist_ok=True)
        wanted: set[str] = set()
        prefix = source.rstrip("/") + "/"
        for path in sorted(p for p in self.host.files if p.startswith(prefix)):
            rel = path[len(prefix) :]
            if _excluded_any(matcher, rel):
                continue
            wanted.add(rel)
            target = os.path.join(root, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            n, f = _write_local(target, self.host.files[path])
            moved += n
            files += f
        if delete:
            for dirpath, _, filenames in os.walk(root):
                for name in filenames:
                    rel = os.path.relpath(os.path.join(dirpath, name), root)
                    if rel not in wanted and not _excluded_any(matcher, rel):
                        os.remove(os.path.join(dirpath, name))
        return self._record("pull", remote, local, excludes, delete, None, moved, files)

    def _record(
        self,
        direction: str,
        source: str,
        destination: str,
        excludes: Sequence[str],
        delete: bool,
        chmod: str | None,
        moved: int,
        files: int,
    ) -> TransferResult:
        result = TransferResult(bytes_transferred=moved, files=files)
        self.transfers.append(
            Transfer(direction, source, destination, tuple(excludes), delete, chmod, result)
        )
        return result


def _read_local(path: str) -> tuple[bytes, int, float]:
    with open(path, "rb") as handle:
        data = handle.read()
    info = os.stat(path)
    return data, info.st_mode & 0o7777, info.st_mtime


def _write_local(target: str, entry: FakeFile) -> tuple[int, int]:
    try:
        with open(target, "rb") as handle:
            if handle.read() == entry.data:
                return 0, 0
    except FileNotFoundError:
        pass
    with open(target, "wb") as handle:
        handle.write(entry.data)
    os.chmod(target, entry.mode & 0o777)
    return len(entry.data), 1


def _file_target(host: FakeHost, remote: str, name: str) -> tuple[str, str]:
    if remote.endswith("/") or host.is_dir(remote):
        return remote, name
    return posixpath.dirname(host.resolve(remote)), posixpath.basename(remote)


def _excluded_any(matcher: ExcludeMatcher, rel: str) -> bool:
    parts = rel.split("/")
    if any(matcher.excluded("/".join(parts[:i]), is_dir=True) for i in range(1, len(parts))):
        return True
    return matcher.excluded(rel, is_dir=False)

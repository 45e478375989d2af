"""TarFileSync: the FileSync port as tar streams over Cluster.exec (what `kubectl cp` does).

Same semantics as rsync -rlpt, as SftpFileSync and LocalFileSync have them: a trailing "/"
copies the directory's contents, excludes as rsync patterns (domain.sync_rules), files with the
same size and mtime skipped, --delete only when asked (excluded files on the receiver kept),
--chmod specs, symlinks copied as links, bytes and files transferred counted.

Each transfer first lists the other side (`find -exec stat` in the pod: one exec, POSIX sh and
what GNU and busybox images both have, see pod_commands), decides here what moves, then streams
it in one exec:
- push: a tar archive written here member by member, each file read in 64 KiB pieces (never
  whole), into `tar -x` in the pod. Its size is known before its first byte, and the pod reads
  exactly that many, so no stdin EOF is needed (the exec protocol v4 has none). tar creates
  each file with its final mode, never wider.
- pull: the names wanted go to `tar -c` in the pod; its archive is extracted here as it
  arrives, through a bounded queue (backpressure reaches the pod), and only members that were
  asked for, by their exact names, are written: a pod cannot make us write anywhere else (nor
  can its listing name a path outside the one listed).
Files land through a temporary name renamed into place.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import queue
import stat
import tarfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TypeVar

import attrs

from pegboard.adapters import pod_commands
from pegboard.adapters.kubernetes_errors import one_line
from pegboard.adapters.local_file_sync import _remove, _under_excluded, delete_extraneous
from pegboard.adapters.push_checks import check_source, checked_chmod
from pegboard.domain.errors import NotFound, PortError, Transient
from pegboard.domain.ports.cluster import Cluster, ExecResult, ExecTimedOut, OutputSink
from pegboard.domain.ports.file_sync import TransferResult
from pegboard.domain.sync_rules import ExcludeMatcher

__all__ = ["TarFileSync"]

_DEFAULT_TIMEOUT_SEC = 3600.0
_LIST_TIMEOUT_SEC = 120.0
_CHUNK = 64 * 1024
_QUEUE_CHUNKS = 32  # at most this many pieces of a pulled archive wait for the extractor
_T = TypeVar("_T")


@attrs.frozen
class _Entry:
    """One path of a tree, relative to the tree's root ("" for the root itself)."""

    rel: str
    kind: str  # "f", "d", "l" (as `find -type` names them), others ignored
    size: int = 0
    mtime: int = 0
    mode: int = 0o644
    link: str = ""


class TarFileSync:
    """rsync semantics between this machine and one container of one pod, over exec."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        namespace: str,
        pod: str,
        container: str | None = None,
    ) -> None:
        self._target = pod_commands.PodTarget(cluster, namespace, pod, container)

    @property
    def where(self) -> str:
        return self._target.where

    # --- push ----------------------------------------------------------------------------

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
        matcher = ExcludeMatcher(excludes)
        src = local.rstrip("/") or "/"
        if not os.path.isdir(src) or os.path.islink(src):
            name = os.path.basename(src)
            if matcher.excluded(name, is_dir=False):
                return TransferResult(bytes_transferred=0, files=0)
            into = remote.endswith("/") or self._remote_kind(remote) == "d"
            root = remote.rstrip("/") if into else posixpath.dirname(remote.rstrip("/")) or "/"
            target = name if into else posixpath.basename(remote.rstrip("/"))
            sources = {target: src}
            there = self._tree(posixpath.join(root, target), missing_ok=True, max_depth=0)
            existing = {target: attrs.evolve(there[0], rel=target)} if there else {}
        else:
            root = remote.rstrip("/") or "/"
            if not local.endswith("/"):
                root = posixpath.join(root, os.path.basename(src))
            sources = _local_tree(src, matcher)
            existing = {e.rel: e for e in self._tree(root, missing_ok=True)}
        file_mode = modes.file_mode if modes else None
        plan = self._guarded(lambda: _push_plan(sources, existing, file_mode), f"push {local}")
        if any(item.changed for item in plan):
            dir_mode = modes.dir_mode if modes else None
            argv = pod_commands.untar(root, size=_archive_size(plan, dir_mode))
            self._guarded(
                lambda: self._transfer(argv, stdin=_archive(plan, dir_mode), timeout=timeout),
                f"push {local}",
            )
        if delete and os.path.isdir(src):
            extra = [
                rel
                for rel, entry in existing.items()
                if rel
                and rel not in sources
                and not _under_excluded(rel, entry.kind == "d", matcher)
                and not _inside(rel, existing, sources, matcher)
            ]
            if extra:
                names = b"".join(os.fsencode(rel) + b"\0" for rel in extra)
                argv = pod_commands.remove(root, list_size=len(names))
                self._transfer(argv, stdin=names, timeout=timeout)
        moved = [item for item in plan if item.changed and item.kind != "d"]
        return TransferResult(
            bytes_transferred=sum(item.size for item in moved if item.kind == "f"),
            files=len(moved),
        )

    def _remote_kind(self, path: str) -> str | None:
        entries = self._tree(path.rstrip("/") or "/", missing_ok=True, max_depth=0)
        return entries[0].kind if entries else None

    # --- pull ----------------------------------------------------------------------------

    def pull(
        self,
        remote: str,
        local: str,
        *,
        excludes: Sequence[str] = (),
        delete: bool = False,
        timeout: float | None = None,
    ) -> TransferResult:
        matcher = ExcludeMatcher(excludes)
        src = remote.rstrip("/") or "/"
        entries = self._tree(src, missing_ok=False)
        top = next(e for e in entries if e.rel == "")
        if top.kind != "d":
            name = posixpath.basename(src)
            if matcher.excluded(name, is_dir=False):
                return TransferResult(bytes_transferred=0, files=0)
            into = local.endswith("/") or os.path.isdir(local)
            target = os.path.join(local, name) if into else local
            with _local_errors(target):
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            if _local_up_to_date(top, target):
                return TransferResult(bytes_transferred=0, files=0)
            one = {name: attrs.evolve(top, rel=name)}
            return self._fetch(posixpath.dirname(src) or "/", {name: target}, one, timeout)
        root = local if remote.endswith("/") else os.path.join(local, posixpath.basename(src))
        kept = [
            e
            for e in entries
            if e.rel
            and e.kind in ("f", "d", "l")
            and not _under_excluded(e.rel, e.kind == "d", matcher)
        ]
        seen = {""} | {e.rel for e in kept}
        dirs = [""] + [e.rel for e in kept if e.kind == "d"]
        with _local_errors(root):
            for rel in dirs:
                _ensure_local_dir(os.path.join(root, rel))
        wanted: dict[str, str] = {}
        infos: dict[str, _Entry] = {}
        for entry in kept:
            if entry.kind == "d":
                continue
            target = os.path.join(root, entry.rel)
            if not _local_up_to_date(entry, target):
                wanted[entry.rel] = target
                infos[entry.rel] = entry
        result = self._fetch(src, wanted, infos, timeout)
        modes = {e.rel: e.mode for e in kept if e.kind == "d"} | {"": top.mode}
        with _local_errors(root):
            for rel in sorted(dirs, key=len, reverse=True):
                os.chmod(os.path.join(root, rel), modes[rel])
            if delete:
                delete_extraneous(root, seen, matcher)
        return result

    def _fetch(
        self,
        root: str,
        wanted: dict[str, str],
        infos: dict[str, _Entry],
        timeout: float | None,
    ) -> TransferResult:
        """Stream `tar -c` of the wanted names (relative to `root`) into their local targets."""
        if not wanted:
            return TransferResult(bytes_transferred=0, files=0)
        names = b"".join(os.fsencode(rel) + b"\0" for rel in wanted)
        extractor = _Extractor(wanted, infos)
        argv = pod_commands.tar(root, list_size=len(names))
        try:
            self._guarded(
                lambda: self._transfer(
                    argv, stdin=names, timeout=timeout, on_stdout=extractor.feed
                ),
                f"pull {root}",
            )
        finally:
            extractor.finish()
        done = extractor.result()
        missing = set(wanted) - extractor.written
        if missing:
            raise PortError(f"pull from {self.where}: the pod sent no {sorted(missing)[0]}")
        return done

    # --- the pod side --------------------------------------------------------------------

    def _tree(self, path: str, *, missing_ok: bool, max_depth: int | None = None) -> list[_Entry]:
        out: list[bytes] = []
        argv = pod_commands.tree(path, max_depth=max_depth)
        result = self._exec(argv, timeout=_LIST_TIMEOUT_SEC, on_stdout=out.append)
        if result.exit_code == pod_commands.NO_SUCH_FILE:
            if missing_ok:
                return []
            raise NotFound(f"no such file or directory in {self.where}: {path}")
        if result.exit_code != 0:
            raise PortError(f"cannot list {path} in {self.where}: {_tail(result.stderr)}")
        return _parse_tree(b"".join(out), pod_commands.listed_as(path))

    def _exec(
        self,
        argv: list[str],
        *,
        timeout: float | None,
        stdin: bytes | Iterator[bytes] | None = None,
        on_stdout: OutputSink | None = None,
    ) -> ExecResult:
        limit = timeout or _DEFAULT_TIMEOUT_SEC
        try:
            result = self._target.exec(argv, stdin=stdin, on_stdout=on_stdout, timeout=limit)
        except ExecTimedOut:
            raise Transient(f"transfer with {self.where} timed out after {limit:g}s") from None
        return result

    def _transfer(
        self,
        argv: list[str],
        *,
        timeout: float | None,
        stdin: bytes | Iterator[bytes],
        on_stdout: OutputSink | None = None,
    ) -> None:
        """One tar, untar or remove in the pod; PortError when it fails there."""
        result = self._exec(argv, timeout=timeout, stdin=stdin, on_stdout=on_stdout)
        if result.exit_code != 0:
            raise PortError(
                f"tar in {self.where} exited {result.exit_code}: {_tail(result.stderr)}",
                status=result.exit_code,
            )

    def _guarded(self, call: Callable[[], _T], doing: str) -> _T:
        try:
            return call()
        except PortError:
            raise
        except OSError as exc:  # the local side: the port raises PortErrors only
            raise PortError(f"{doing} failed: {exc.strerror or exc}") from None


# --- planning a push ---------------------------------------------------------------------


@attrs.frozen
class _Item:
    rel: str
    source: str
    kind: str
    size: int
    mtime: int
    mode: int
    link: str
    changed: bool


def _local_tree(src: str, matcher: ExcludeMatcher) -> dict[str, str]:
    """rel -> local path of everything the push takes ("" is the root directory)."""
    taken = {"": src}
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = "" if rel_dir == "." else rel_dir
        kept = []
        for name in sorted(dirnames):
            full = os.path.join(dirpath, name)
            rel = os.path.join(rel_dir, name)
            if matcher.excluded(rel, is_dir=not os.path.islink(full)):
                continue
            if os.path.islink(full):
                filenames.append(name)  # a link to a directory is copied as a link
                continue
            kept.append(name)
            taken[rel] = full
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = os.path.join(rel_dir, name)
            if not matcher.excluded(rel, is_dir=False):
                taken[rel] = os.path.join(dirpath, name)
    return taken


def _push_plan(
    sources: dict[str, str], existing: dict[str, _Entry], file_mode: int | None
) -> list[_Item]:
    plan = []
    for rel, path in sources.items():
        info = os.lstat(path)
        there = existing.get(rel)
        if stat.S_ISLNK(info.st_mode):
            link = os.readlink(path)
            changed = there is None or there.kind != "l" or there.link != link
            plan.append(_Item(rel, path, "l", 0, int(info.st_mtime), 0o777, link, changed))
        elif stat.S_ISDIR(info.st_mode):
            mode = stat.S_IMODE(info.st_mode)
            plan.append(_Item(rel, path, "d", 0, int(info.st_mtime), mode, "", True))
        elif stat.S_ISREG(info.st_mode):
            mode = file_mode if file_mode is not None else stat.S_IMODE(info.st_mode)
            same = (
                there is not None
                and there.kind == "f"
                and there.size == info.st_size
                and there.mtime == int(info.st_mtime)
                and there.mode == mode
            )
            size, mtime = info.st_size, int(info.st_mtime)
            plan.append(_Item(rel, path, "f", size, mtime, mode, "", not same))
    return plan


def _archive(plan: list[_Item], dir_mode: int | None) -> Iterator[bytes]:
    """The tar archive (GNU format: long names) of the plan's changed items, piece by piece:
    exactly _archive_size bytes."""
    written = 0
    for item in plan:
        if not item.changed:
            continue
        header = _header(item, dir_mode)
        written += len(header)
        yield header
        if item.kind == "f":
            for piece in _file_pieces(item.source, item.size):
                written += len(piece)
                yield piece
            padding = -item.size % tarfile.BLOCKSIZE
            written += padding
            yield b"\0" * padding
    yield b"\0" * _archive_end(written)


def _archive_size(plan: list[_Item], dir_mode: int | None) -> int:
    size = 0
    for item in plan:
        if item.changed:
            size += len(_header(item, dir_mode))
            if item.kind == "f":
                size += item.size + -item.size % tarfile.BLOCKSIZE
    return size + _archive_end(size)


def _archive_end(written: int) -> int:
    """The end-of-archive blocks, then zeros to a whole record, as tar reads them."""
    end = 2 * tarfile.BLOCKSIZE
    return end + -(written + end) % tarfile.RECORDSIZE


def _header(item: _Item, dir_mode: int | None) -> bytes:
    info = tarfile.TarInfo(item.rel or ".")
    info.mtime = item.mtime
    info.mode = item.mode
    if item.kind == "d":
        info.type = tarfile.DIRTYPE
        info.mode = dir_mode if dir_mode is not None else item.mode
    elif item.kind == "l":
        info.type = tarfile.SYMTYPE
        info.linkname = item.link
    else:
        info.size = item.size
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def _file_pieces(path: str, size: int) -> Iterator[bytes]:
    """Exactly `size` bytes of the file (what its header announced), 64 KiB at a time: a file
    that shrank meanwhile is padded with zeros, one that grew is cut, as GNU tar does."""
    left = size
    with open(path, "rb") as reader:
        while left:
            piece = reader.read(min(_CHUNK, left))
            if not piece:
                yield b"\0" * left
                return
            left -= len(piece)
            yield piece


def _inside(
    rel: str, existing: dict[str, _Entry], sources: dict[str, str], matcher: ExcludeMatcher
) -> bool:
    """Whether an ancestor of `rel` is itself removed (one rm -rf takes it all)."""
    parent = posixpath.dirname(rel)
    while parent:
        if parent not in sources and not _under_excluded(parent, True, matcher):
            return True
        parent = posixpath.dirname(parent)
    return False


# --- reading the pod's tree ---------------------------------------------------------------


_KINDS = {stat.S_IFREG: "f", stat.S_IFDIR: "d", stat.S_IFLNK: "l"}


def _parse_tree(data: bytes, path: str) -> list[_Entry]:
    """What pod_commands.tree printed for `path`: batches of a block of `stat` lines, then a
    (name, link target) pair a line."""
    fields = data.split(b"\0")[:-1]  # every field ends in a NUL
    listed = os.fsencode(path)
    entries = []
    at = 0
    while at < len(fields):
        lines = fields[at].splitlines()
        pairs = fields[at + 1 : at + 1 + 2 * len(lines)]
        at += 1 + 2 * len(lines)
        if len(pairs) != 2 * len(lines):
            raise PortError(f"unexpected listing from the pod: {_shown(fields[at - 1 :])}")
        for line, name, link in zip(lines, pairs[::2], pairs[1::2], strict=True):
            entries.append(_entry(line, _relative(name, listed), link))
    return entries


def _entry(line: bytes, rel: str, link: bytes) -> _Entry:
    try:
        raw, size, mtime = line.split()
        mode = int(raw, 16)
        return _Entry(
            rel=rel,
            kind=_KINDS.get(stat.S_IFMT(mode), "other"),
            size=int(size),
            mtime=int(mtime),
            mode=stat.S_IMODE(mode),
            link=os.fsdecode(link),
        )
    except ValueError:
        raise PortError(f"unexpected listing from the pod: {_shown([line])}") from None


def _relative(name: bytes, path: bytes) -> str:
    """The path find printed, relative to the one listed ("" for itself); a name that is not
    under it, or climbs out of it, is refused: a pull writes where the listing says."""
    if name == path:
        return ""
    prefix = path if path.endswith(b"/") else path + b"/"
    rel = name[len(prefix) :] if name.startswith(prefix) else b""
    if not rel or any(part in (b"", b".", b"..") for part in rel.split(b"/")):
        raise PortError(f"unexpected listing from the pod: {_shown([name])}")
    return os.fsdecode(rel)


def _shown(fields: Sequence[bytes]) -> str:
    return one_line(repr(list(fields)[:4]))[:300]


# --- the local side of a pull -----------------------------------------------------------


def _local_up_to_date(entry: _Entry, target: str) -> bool:
    try:
        local = os.lstat(target)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise PortError(f"cannot read {target}: {exc.strerror or exc}") from None
    if entry.kind == "l":
        return stat.S_ISLNK(local.st_mode) and os.readlink(target) == entry.link
    same = stat.S_ISREG(local.st_mode) and local.st_size == entry.size
    if not same or int(local.st_mtime) != entry.mtime:
        return False
    if stat.S_IMODE(local.st_mode) != entry.mode:
        with _local_errors(target):
            os.chmod(target, entry.mode)
    return True


def _ensure_local_dir(path: str) -> None:
    if os.path.lexists(path) and not (os.path.isdir(path) and not os.path.islink(path)):
        _remove(path)
    os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def _local_errors(path: str) -> Iterator[None]:
    """The local disk's OSError as the PortError the port raises."""
    try:
        yield
    except OSError as exc:
        raise PortError(f"cannot write {path}: {exc.strerror or exc}") from None


class _QueueReader:
    """A file the extractor reads from; the exec's output sink fills it (bounded)."""

    def __init__(self) -> None:
        self.chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUE_CHUNKS)
        self._pending = b""
        self._ended = False

    def read(self, size: int = -1) -> bytes:
        while not self._ended and (size < 0 or len(self._pending) < size):
            chunk = self.chunks.get()
            if chunk is None:
                self._ended = True
                break
            self._pending += chunk
        if size < 0:
            data, self._pending = self._pending, b""
        else:
            data, self._pending = self._pending[:size], self._pending[size:]
        return data


class _Extractor:
    """Extracts the pulled archive in a thread, member by member, only the names asked for."""

    def __init__(self, wanted: dict[str, str], infos: dict[str, _Entry]) -> None:
        self._wanted = wanted
        self._infos = infos
        self._reader = _QueueReader()
        self.written: set[str] = set()
        self._bytes = 0
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tar-pull", daemon=True)
        self._thread.start()

    def feed(self, chunk: bytes) -> None:
        while self._thread.is_alive():
            try:
                self._reader.chunks.put(chunk, timeout=0.5)
                return
            except queue.Full:
                continue
        if self._failure is not None:  # stop the exec: nobody takes its output any more
            raise PortError(f"extracting the pulled files failed: {self._failure}")

    def finish(self) -> None:
        while self._thread.is_alive():
            try:
                self._reader.chunks.put(None, timeout=0.5)
                break
            except queue.Full:
                continue
        self._thread.join()

    def result(self) -> TransferResult:
        if isinstance(self._failure, PortError):
            raise self._failure
        if self._failure is not None:
            raise PortError(f"extracting the pulled files failed: {self._failure}")
        return TransferResult(bytes_transferred=self._bytes, files=len(self.written))

    def _run(self) -> None:
        try:
            # ignore_zeros: the pod's xargs may have run tar more than once, archive after archive
            with tarfile.open(fileobj=self._reader, mode="r|", ignore_zeros=True) as archive:  # type: ignore[call-overload]
                for member in archive:
                    self._member(archive, member)
            self._reader.read()  # drain what follows the archive (record padding)
        except BaseException as exc:  # reported by result(); the sink stops the exec
            self._failure = exc
            try:
                while True:
                    self._reader.chunks.get_nowait()
            except queue.Empty:
                pass

    def _member(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        rel = member.name.removeprefix("./")
        target = self._wanted.get(rel)
        if target is None or rel in self.written:
            return  # not asked for: never written, whatever its name says
        info = self._infos[rel]
        if member.issym():
            _remove(target)
            os.symlink(member.linkname, target)
        elif member.isreg():
            source = archive.extractfile(member)
            assert source is not None
            self._bytes += _write_file(source, target, info)
        else:
            return
        self.written.add(rel)


def _write_file(source: IO[bytes], target: str, info: _Entry) -> int:
    tmp = os.path.join(os.path.dirname(target) or ".", f".{os.path.basename(target)}.pgtmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    size = 0
    with os.fdopen(fd, "wb") as writer:
        while piece := source.read(_CHUNK):
            writer.write(piece)
            size += len(piece)
    os.utime(tmp, (info.mtime, info.mtime))
    os.chmod(tmp, info.mode)
    if os.path.isdir(target) and not os.path.islink(target):
        _remove(target)
    os.replace(tmp, target)
    return size


def _tail(data: bytes) -> str:
    return one_line(data.decode(errors="replace"))[-300:] or "no error output"

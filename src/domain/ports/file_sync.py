"""FileSync port: copy directory trees between this machine and the pod (rsync semantics).

A source ending in "/" copies the directory's contents; without it the directory itself is
copied into the destination. `excludes` are rsync patterns ("dir/", "*.pyc", "**/__pycache__/",
"/anchored"). Files already identical (same size and mtime) are skipped. `delete` removes
destination files that the source does not have and is never implied.
Errors: NotFound when the source does not exist, PortError otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

__all__ = [
    "FileSync",
    "TransferResult",
]


@attrs.frozen
class TransferResult:
    """What moved: bytes of file data transferred and the number of files transferred."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    bytes_transferred: int
    files: int


@runtime_checkable
class FileSync(Protocol):
    """rsync to and from one pod."""

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
        """Local -> pod. `chmod` is an rsync --chmod spec applied to every file ("F600")."""
        ...

    def pull(
        self,
        remote: str,
        local: str,
        *,
        excludes: Sequence[str] = (),
        delete: bool = False,
        timeout: float | None = None,
    ) -> TransferResult:
        """Pod -> local; the local destination directory is created when missing."""
        ...

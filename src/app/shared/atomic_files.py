"""Files written whole or not at all (a temp file beside the target, then a rename), and the
probe that proves one can be written before anything depends on it. Both apps use them: the
run records and pod pointers of runpod-deploy, squarepeg's --result-file."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: Any, *, mode: int = 0o644) -> None:
    """Write JSON to a temp file beside `path`, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A short temp name: a final name that fits the file system always has a temp that fits.
    tmp = path.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace `path` with `data` through a temp file beside it and a rename."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def prove_writable(path: Path) -> None:
    """Raise OSError unless a file with a name as long as this one can be created beside it.

    Done before a pod exists for every file a run writes after create (the pod pointers), so
    a name too long for the file system or a read-only directory fails the run while there is
    nothing to leak. The probe has its own name: never the target, which a concurrent run of
    the same config may be writing at this moment.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(8):
        probe = path.with_name(("." + secrets.token_hex(128))[: max(len(path.name), 9)])
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        probe.unlink()
        return
    raise FileExistsError(f"cannot find a free probe name beside {path}")

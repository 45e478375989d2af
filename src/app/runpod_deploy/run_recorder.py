"""Writing a run's records: events.jsonl as things happen, metrics.jsonl, snapshot files and
the manifest (always, atomically), all through one RunRecorder per run directory. The pod
pointers (state files) are pod_pointers.py; reading past runs' records back is run_history.py.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pegboard.domain.gpujob.records import EVENTS_NAME, MANIFEST_NAME, METRICS_NAME, event_row
from pegboard.domain.ports.clock import Clock

logger = logging.getLogger(__name__)


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


def _unmasked(value: Any) -> Any:
    return value


class RunRecorder:
    """The files in one run directory. `mask` is applied to everything written (secret values
    become ***: events, metrics, snapshots, the manifest)."""

    def __init__(
        self, run_dir: Path, clock: Clock, *, mask: Callable[[Any], Any] = _unmasked
    ) -> None:
        self.run_dir = run_dir
        self._clock = clock
        self._mask = mask
        self.files: list[str] = []  # basenames of the telemetry files written, in order

    def _touch(self, name: str) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if name not in self.files:
            self.files.append(name)
        return self.run_dir / name

    def event(self, event: str, **fields: Any) -> None:
        """Append one events.jsonl row; a failure to write is a warning, never fatal."""
        try:
            path = self._touch(EVENTS_NAME)
            with path.open("a") as handle:
                row = self._mask(event_row(event, ts=self._clock.now(), **fields))
                handle.write(json.dumps(row) + "\n")
        except OSError as exc:
            logger.warning("[records] could not write event %s: %s", event, exc)

    def metrics(self, row: dict[str, Any]) -> None:
        try:
            with self._touch(METRICS_NAME).open("a") as handle:
                handle.write(json.dumps(self._mask(row)) + "\n")
        except OSError as exc:
            logger.warning("[records] could not write metrics: %s", exc)

    def snapshot(self, name: str, content: str) -> None:
        try:
            self._touch(name).write_text(self._mask(content))
        except OSError as exc:
            logger.warning("[records] could not write %s: %s", name, exc)

    def manifest(self, data: dict[str, Any]) -> Path:
        path = self.run_dir / MANIFEST_NAME
        write_json_atomic(path, self._mask(data))
        return path

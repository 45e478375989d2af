"""Writing a run's records: events.jsonl as things happen, metrics.jsonl, snapshot files, the
manifest (always, atomically), and the pod pointer (state file, atomically, the moment a pod id
exists).
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import secrets
from pathlib import Path
from typing import Any

from pegboard.domain.gpujob.records import EVENTS_NAME, MANIFEST_NAME, METRICS_NAME, event_row
from pegboard.domain.gpujob.templates import default_state_file
from pegboard.domain.input_limits import MAX_CONFIG_BYTES, decode_text, loads_json
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


class RunRecorder:
    """The files in one run directory."""

    def __init__(self, run_dir: Path, clock: Clock) -> None:
        self.run_dir = run_dir
        self._clock = clock
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
                handle.write(json.dumps(event_row(event, ts=self._clock.now(), **fields)) + "\n")
        except OSError as exc:
            logger.warning("[records] could not write event %s: %s", event, exc)

    def metrics(self, row: dict[str, Any]) -> None:
        try:
            with self._touch(METRICS_NAME).open("a") as handle:
                handle.write(json.dumps(row) + "\n")
        except OSError as exc:
            logger.warning("[records] could not write metrics: %s", exc)

    def snapshot(self, name: str, content: str) -> None:
        try:
            self._touch(name).write_text(content)
        except OSError as exc:
            logger.warning("[records] could not write %s: %s", name, exc)

    def manifest(self, data: dict[str, Any]) -> Path:
        path = self.run_dir / MANIFEST_NAME
        write_json_atomic(path, data)
        return path


class PodPointer:
    """A state file naming the pod a run created (atomic writes).

    Two exist per run: the per-run pointer (`run_pointer_path`, unique to the run, written
    before the pod is created and the one every release command names) and the config's
    `state_file` (shared by the runs of one config: recycle, `logs --config`, 0.8.4 scripts).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        from pegboard.app.runpod_deploy.wiring import read_record_bytes  # bounded

        try:  # the path comes from the config (`state_file`): /dev/zero must not hang
            data = loads_json(decode_text(read_record_bytes(self.path, MAX_CONFIG_BYTES)))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # InputRejected and malformed JSON are ValueErrors
            logger.warning("[state] ignoring unreadable state file %s: %s", self.path, exc)
            return None
        return data if isinstance(data, dict) else None

    def write(self, data: dict[str, Any]) -> None:
        write_json_atomic(self.path, data)

    def remove_if_points_at(self, pod_id: str) -> bool:
        """Unlink only if the file still names `pod_id` (never another run's pointer)."""
        current = self.read()
        if current is None or current.get("pod_id") != pod_id:
            return False
        self.path.unlink(missing_ok=True)
        return True

    def remove_if_no_pod(self) -> bool:
        """Unlink a pointer written before create that never got a pod id."""
        current = self.read()
        if current is None or current.get("pod_id") is not None:
            return False
        self.path.unlink(missing_ok=True)
        return True


RUN_POINTERS_SUBDIR = "runs"


def state_dir(home: str) -> Path:
    """Where `run` keeps the user's pod pointers (the per-config defaults and `runs/`)."""
    default = posixpath.dirname(default_state_file(config_path="", job_name="job"))
    return Path(home) / default.removeprefix("~/")


def run_pointer_path(state_dir: Path, run_stamp: str) -> Path:
    """`<state dir>/runs/<run stamp>.json`: unique per run, and short whatever the job name."""
    return state_dir / RUN_POINTERS_SUBDIR / f"{run_stamp}.json"

"""Writing a run's records: events.jsonl as things happen, metrics.jsonl, snapshot files, the
manifest (always, atomically), and the pod pointer (state file, atomically, the moment a pod id
exists).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pegboard.domain.gpujob.records import EVENTS_NAME, MANIFEST_NAME, METRICS_NAME, event_row
from pegboard.domain.ports.clock import Clock

logger = logging.getLogger(__name__)


def write_json_atomic(path: Path, data: Any, *, mode: int = 0o644) -> None:
    """Write JSON to a temp file beside `path`, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)


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
    """The state file naming the pod a run created (per config; atomic writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
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

"""Writing a run's records: events.jsonl as things happen, metrics.jsonl, snapshot files and
the manifest (always, atomically), all through one RunRecorder per run directory. The pod
pointers (state files) are pod_pointers.py; reading past runs' records back is run_history.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pegboard.app.shared.atomic_files import prove_writable, write_bytes_atomic, write_json_atomic
from pegboard.domain.gpujob.records import EVENTS_NAME, MANIFEST_NAME, METRICS_NAME, event_row
from pegboard.domain.ports.clock import Clock

logger = logging.getLogger(__name__)

__all__ = ["RunRecorder", "prove_writable", "write_bytes_atomic", "write_json_atomic"]


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

"""`squarepeg run --result-file PATH`: one JSON record of the run, for CI scripts.

Written on every path once the command line parsed (success, the container's failure, a runner
failure, a config error, Ctrl-C and SIGTERM), atomically (a temp file beside PATH, then a
rename: a reader never sees half a record). Only SIGKILL leaves none. The keys are public
(docs/squarepeg/cli-reference.md, "--result-file"); new keys may be added in any release.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from pegboard.app.shared.atomic_files import prove_writable, write_json_atomic
from pegboard.domain.attrs_methods import attrs_eq, attrs_repr
from pegboard.domain.errors import UsageError

SCHEMA_VERSION = 1


@attrs.define
class RunReport:
    """What one run learned about itself, filled as it goes (app/squarepeg/lifecycle.py)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq

    run_id: str
    started_at: float  # wall clock, epoch seconds
    started_monotonic: float
    kind: str | None = None  # "Pod" or "Job"
    name: str | None = None
    namespace: str | None = None
    context: str | None = None
    pod: str | None = None  # the pod followed last (in Job mode, the last attempt's)
    created: bool = False
    kept: bool = False
    dry_run: bool = False
    container_exit_code: int | None = None
    output_complete: bool | None = None  # None: no output was to be streamed (never started)
    created_monotonic: float | None = None
    running_monotonic: float | None = None  # the container ran: its log is being streamed
    followed_monotonic: float | None = None  # the container (the last Job pod) was done with
    error: str | None = None

    def record(self, *, exit_code: int, ended_monotonic: float) -> dict[str, Any]:
        def span(start: float | None, end: float | None) -> float | None:
            return None if start is None or end is None else round(max(0.0, end - start), 3)

        return {
            "schema_version": SCHEMA_VERSION,
            "exit_code": exit_code,
            "container_exit_code": self.container_exit_code,
            "output_complete": self.output_complete,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "context": self.context,
            "pod": self.pod,
            "created": self.created,
            "kept": self.kept,
            "dry_run": self.dry_run,
            "run_id": self.run_id,
            "error": self.error,
            "started_at": datetime.fromtimestamp(self.started_at, UTC).isoformat(),
            "durations_seconds": {
                "total": span(self.started_monotonic, ended_monotonic),
                "startup": span(self.created_monotonic, self.running_monotonic),
                "running": span(self.running_monotonic, self.followed_monotonic),
                "cleanup": span(self.followed_monotonic, ended_monotonic),
            },
        }


def check_result_file(path: Path) -> None:
    """Before anything is created: the record must be writable there (exit 2 if not)."""
    if path.is_dir():
        raise UsageError(f"--result-file {path}: is a directory")
    try:
        prove_writable(path)
    except OSError as exc:
        raise UsageError(
            f"--result-file {path}: cannot write there: {exc.strerror or exc}"
        ) from None


def write_result_file(path: Path, record: dict[str, Any]) -> None:
    write_json_atomic(path, record)

"""`runpod-deploy run -o json`: one JSON object on stdout when the run is over, for CI scripts.

The job's own output then goes to stderr (with the tool's messages), so stdout holds the summary
alone and `runpod-deploy run -o json > summary.json` is a valid JSON file. The keys come from the
run's result and its manifest (docs/runpod-deploy/records.md); docs/runpod-deploy/cli-reference.md
lists them. New keys may appear in any release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .run_history import read_manifest
from .run_types import RunResult

SCHEMA_VERSION = 1
# What a CI step most often asks of a finished run, as the manifest records it.
MANIFEST_KEYS = (
    "job_name",
    "run_id",
    "pod_id",
    "gpu_id",
    "datacenter_id",
    "remote_exit_code",
    "wall_time_sec",
    "estimated_cost_usd",
    "phase_durations_sec",
    "left_behind",
    "pods_created",
)


def run_summary(result: RunResult) -> dict[str, Any]:
    """The summary of a run that got as far as its run directory (every outcome)."""
    manifest = read_manifest(Path(result.manifest_path)) if result.manifest_path else None
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "exit_code": result.exit_code,
        "outcome": result.outcome,
        "failure_phase": result.failure_phase,
        "failure_reason": result.failure_reason,
        "run_dir": result.run_dir,
        "manifest": result.manifest_path,
        "error": None,
    }
    for key in MANIFEST_KEYS:
        summary[key] = (manifest or {}).get(key)
    return summary


def refused_summary(exit_code: int, error: BaseException) -> dict[str, Any]:
    """The summary of a run refused before it had a run directory (a usage or config error)."""
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "exit_code": exit_code,
        "outcome": "refused" if exit_code == 2 else "error",
        "failure_phase": None,
        "failure_reason": None,
        "run_dir": None,
        "manifest": None,
        "error": (str(error).splitlines() or [type(error).__name__])[0],
    }
    summary.update(dict.fromkeys(MANIFEST_KEYS))
    return summary

"""Reading past runs back (for ls-runs, manifest-summary, compare-runs, events, events-query).

The record readers read what `run` leaves in `<project_root>/artifacts/runpod/<run-dir>/`: the manifest
`runpod_deploy_pull_manifest.json` and `events.jsonl`, as written by runpod-deploy 0.8.4 or by
pegboard (fields either one lacks are shown as missing, never an error). Results go to stdout;
notes and warnings about unreadable files go to stderr.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pegboard.app.shared.seams import read_record_bytes
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob import forensics
from pegboard.domain.gpujob.forensics import EVENTS_FILENAME, MANIFEST_FILENAME
from pegboard.domain.input_limits import MAX_RECORD_BYTES, InputRejected

logger = logging.getLogger(__name__)

RUNS_SUBDIR = Path("artifacts") / "runpod"


class UnreadableRecord(UsageError):
    """A record named on the command line that is missing, unreadable or malformed: bad input,
    exit 2 like a bad config (1 stays for runtime failures and `compare-runs`' failed run)."""


def load_manifest(path: Path) -> dict[str, Any]:
    """A manifest file, or a run directory holding one; UnreadableRecord (one line naming the
    file) if missing, unreadable, malformed or past a limit (docs/runpod-deploy/records.md)."""
    if path.is_dir():
        path = path / MANIFEST_FILENAME
    try:
        return forensics.parse_manifest(_read_record(path))
    except FileNotFoundError:
        raise UnreadableRecord(f"manifest not found: {path}") from None
    except OSError as exc:
        raise UnreadableRecord(f"cannot read manifest {path}: {exc.strerror or exc}") from None
    except InputRejected as exc:
        raise UnreadableRecord(f"cannot parse manifest {path}: {exc}") from None


def read_manifest(path: Path) -> dict[str, Any] | None:
    """load_manifest, or None with a one-line warning (the listings skip a broken record)."""
    try:
        return load_manifest(path)
    except UnreadableRecord as exc:
        logger.warning("%s", exc)
        return None


def read_events(path: Path) -> list[dict[str, Any]]:
    """events.jsonl of a run directory (or the file itself); a bad line is skipped with a
    warning, the other lines still count."""
    if path.is_dir():
        path = path / EVENTS_FILENAME
    try:
        data = _read_record(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        logger.warning("cannot read %s: %s", path, exc.strerror or exc)
        return []
    except InputRejected as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return []
    events, warnings = forensics.parse_events(data)
    for warning in warnings:
        logger.warning("%s: %s", path, warning)
    return events


def _read_record(path: Path) -> bytes:
    return read_record_bytes(path, MAX_RECORD_BYTES)  # bounded (input_limits)


def run_dirs(project_root: Path) -> list[Path]:
    """Run directories with a manifest, oldest first (their names sort by time)."""
    base = project_root / RUNS_SUBDIR
    if not base.is_dir():
        return []
    return sorted(
        child
        for child in base.iterdir()
        if child.is_dir() and (child / MANIFEST_FILENAME).is_file()
    )

"""Pulling a run's results off the pod: the job log, then each artifact, each recorded as an
event and as a manifest row.
"""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import PortError
from pegboard.domain.gpujob.records import ArtifactRecord
from pegboard.domain.gpujob.templates import RenderedArtifact, RenderedJob
from pegboard.domain.ports.file_sync import FileSync

from .run_recorder import write_bytes_atomic
from .run_state import RunContext
from .run_types import PhaseFailed

logger = logging.getLogger(__name__)


@attrs.frozen
class Pulled:
    """One manifest row per artifact, and the required ones that failed (success path only)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    artifacts: list[ArtifactRecord]
    required_failures: list[str]

    def check(self) -> None:
        """A required artifact that failed fails the run."""
        if self.required_failures:
            raise PhaseFailed("required artifact(s) failed: " + "; ".join(self.required_failures))


def pull(run: RunContext, sync: FileSync, job: RenderedJob, *, success: bool) -> Pulled:
    """The log first (keeping its basename), then each artifact, each recorded as an event.

    A required artifact that fails counts on the success path only.
    """
    run_dir = job.run_dir
    try:
        sync.pull(job.run.log_path, run_dir + "/", timeout=600)
    except PortError as exc:
        run.recorder.event("remote_log_pull_failed", path=job.run.log_path, error=str(exc)[:500])
        logger.warning("[pull] could not pull the job log: %s", exc)
    else:
        _mask_pulled_log(run, Path(run_dir) / posixpath.basename(job.run.log_path))
    artifacts: list[ArtifactRecord] = []
    required_failures = []
    for artifact in job.artifacts:
        run.recorder.event("artifact_pull_started", label=artifact.label)
        started = run.clock.monotonic()
        try:
            result = sync.pull(
                artifact.remote_path,
                artifact.local_path,
                excludes=artifact.excludes,
                delete=artifact.delete,
                timeout=1800,
            )
        except PortError as exc:
            duration = run.clock.monotonic() - started
            artifacts.append(_artifact_record(artifact, "failed", None, duration, error=str(exc)))
            run.recorder.event(
                "artifact_pull_failed",
                label=artifact.label,
                duration_sec=round(duration, 3),
                error=str(exc)[:500],
            )
            logger.warning("[pull] %s failed: %s", artifact.label, exc)
            if artifact.required and success:
                required_failures.append(f"{artifact.label}: {exc}")
            continue
        duration = run.clock.monotonic() - started
        artifacts.append(
            _artifact_record(
                artifact, "success", result.bytes_transferred, duration, files=result.files
            )
        )
        run.recorder.event(
            "artifact_pull_completed",
            label=artifact.label,
            duration_sec=round(duration, 3),
            bytes_transferred=result.bytes_transferred,
        )
        logger.info(
            "[pull] %s -> %s: %d files, %d bytes",
            artifact.label,
            artifact.local_path,
            result.files,
            result.bytes_transferred,
        )
    return Pulled(artifacts=artifacts, required_failures=required_failures)


def _mask_pulled_log(run: RunContext, path: Path) -> None:
    """The pulled job log with every secret value masked, as it was streamed (rewritten
    atomically; the unmasked bytes never stay in the run directory)."""
    if not run.redact:
        return
    try:
        data = path.read_bytes()
        masked = run.redact.mask_bytes(data)
        if masked != data:
            write_bytes_atomic(path, masked)
    except OSError as exc:
        logger.warning("[pull] could not mask secrets in %s: %s", path, exc)


def _artifact_record(
    artifact: RenderedArtifact,
    status: str,
    bytes_transferred: int | None,
    duration: float,
    *,
    files: int | None = None,
    error: str | None = None,
) -> ArtifactRecord:
    """The manifest row of one artifact pull: the artifact's config, then how the pull went."""
    return ArtifactRecord(
        artifact.label,
        artifact.remote_path,
        artifact.local_path,
        artifact.required,
        artifact.excludes,
        artifact.delete,
        status,
        bytes_transferred,
        duration,
        files=files,
        error=error,
    )

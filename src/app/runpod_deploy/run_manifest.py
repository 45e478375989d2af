"""Writing a run's manifest from its final state: always once the config has loaded (dry runs,
early failures, interrupts), with the failing phase and what was left behind.
"""

from __future__ import annotations

import logging

from pegboard.domain.gpujob.records import ManifestInput, build_manifest

from .run_state import PodClaim, RunContext, RunProgress, RunRecord

logger = logging.getLogger(__name__)

OFFLINE_POD_ID = "<pod-id>"


def write_manifest(
    run: RunContext, progress: RunProgress, claim: PodClaim, record: RunRecord
) -> str | None:
    """The manifest's path, or None when it could not be written (logged)."""
    spec, job = run.spec, run.job
    candidate = claim.candidate or record.candidate
    wall = run.clock.monotonic() - run.started
    data = ManifestInput(
        job_name=job.job_name,
        run_id=job.run_id,
        config_path=job.config_path,
        run_dir=job.run_dir,
        storage_mode=str(spec.storage.mode),
        image=spec.pod.image,
        volume_mount=spec.storage.volume_mount,
        volume_name=spec.storage.volume_name,
        volume_gb=spec.storage.volume_gb,
        cost_cap_usd=progress.budget.cost_cap_usd,
        provider=(run.backend.cloud.provider if run.backend else str(spec.pod.provider)),
        cloud_type=str(spec.pod.cloud_type),
        gpu_count=spec.pod.gpu_count,
        tool_version=run.deps.tool_version,
        pulled_at=run.clock.now(),
        failed=progress.failed,
        outcome=progress.outcome,
        dry_run=run.dry_run,
        datacenter_id=candidate.datacenter_id if candidate else None,
        gpu_id=candidate.gpu_id if candidate else None,
        gpu_price_per_hour_usd=None if run.dry_run else progress.budget.price_per_hour_usd,
        gpu_price_source=None if run.dry_run else progress.budget.price_source,
        pod_id=claim.pod_id if not run.request.offline else OFFLINE_POD_ID,
        pod_final_state=record.final_state,
        pod_resumed=claim.resumed,
        wall_time_sec=wall,
        failure_phase=progress.failure_phase,
        failure_reason=progress.failure_reason,
        remote_exit_code=record.remote_exit_code,
        phase_durations_sec=progress.durations,
        lifecycle_action=str(record.action) if record.action else None,
        left_behind="\n".join(progress.left_behind) or None,
        state_file=job.state_file,
        pod_name=None if run.dry_run else job.run_id,
        pods_created=list(claim.created_pod_ids),
        deploy_metadata=record.metadata,
        artifacts=record.artifacts,
        telemetry_files=[name for name in run.recorder.files],
    )
    try:
        return str(run.recorder.manifest(build_manifest(data)))
    except OSError as exc:
        logger.error("[manifest] could not write the manifest in %s: %s", job.run_dir, exc)
        return None

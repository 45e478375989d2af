"""A dry run: pick the candidate and log every step a real run would take, touching nothing."""

from __future__ import annotations

import logging
import os

from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.provisioning import Candidate, offline_candidate, pod_request
from pegboard.domain.gpujob.secret_sources import missing_secret_sources
from pegboard.domain.gpujob.spec import StorageMode

from .provisioning import candidate_plan, override_plan
from .run_state import RunContext, RunProgress
from .run_types import PhaseFailed

logger = logging.getLogger(__name__)


def dry_run(run: RunContext, progress: RunProgress) -> Candidate:
    """Every step a real run would take, logged; returns the candidate it would create on."""
    if run.request.offline:
        # No value is read offline, but a missing source fails here as `run` would (0.8.4 did).
        missing = missing_secret_sources(
            run.job.secrets, is_set=run.deps.environ.__contains__, is_file=os.path.isfile
        )
        if missing:
            raise PhaseFailed("; ".join(item.message for item in missing))
    progress.enter(Phase.PROVISION)
    if run.request.offline:
        plan = override_plan(run.request) or offline_candidate(run.spec)
    else:
        assert run.backend is not None
        plan = candidate_plan(run, run.backend.cloud)
    if not plan.candidates:
        raise PhaseFailed(plan.no_candidate_message())
    candidate = plan.candidates[0]
    request = pod_request(
        run.spec, candidate, name=run.job.run_id, network_volume_id=plan.network_volume_id
    )
    logger.info(
        "[dry-run] would create pod %s: %s x%d in %s, image %s",
        request.name,
        request.gpu_id,
        request.gpu_count,
        request.datacenter_id,
        request.image,
    )
    if request.network_volume_id is not None:
        logger.info("[dry-run] with network volume %s", request.network_volume_id)
    elif run.spec.storage.mode is StorageMode.NETWORK_VOLUME:
        logger.info(
            "[dry-run] network volume %r: its datacenter is looked up when provisioning",
            run.spec.storage.volume_name,
        )
    job = run.job
    for label, commands in (("setup", job.setup), ("preflight", job.all_preflight)):
        for command in commands:
            logger.info("[dry-run] would run %s: %s", label, run.redact(command.command))
    for secret in job.secrets:
        logger.info("[dry-run] would write secret %s to %s", secret.name, secret.destination)
    for staging in job.staging:
        logger.info(
            "[dry-run] would push %s -> %s (excludes: %s)",
            staging.source,
            staging.destination,
            ", ".join(staging.excludes) or "none",
        )
    logger.info("[dry-run] would launch %s, log %s", job.run.script_path, job.run.log_path)
    for artifact in job.artifacts:
        logger.info(
            "[dry-run] would pull %s -> %s%s",
            artifact.remote_path,
            artifact.local_path,
            " (--delete)" if artifact.delete else "",
        )
    logger.info(
        "[dry-run] then %s on success, %s on failure",
        run.spec.lifecycle.on_success,
        run.spec.lifecycle.on_failure,
    )
    return candidate

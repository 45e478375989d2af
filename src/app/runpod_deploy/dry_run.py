"""A dry run: pick the candidate and log every step a real run would take, touching nothing."""

from __future__ import annotations

import logging
import os

from pegboard.domain.gpujob.budget import estimate_budget
from pegboard.domain.gpujob.job_config import JobConfig, plan_job
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.provisioning import Candidate, offline_candidate
from pegboard.domain.gpujob.secret_sources import missing_secret_sources

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
    steps = plan_job(
        JobConfig(
            document=run.document,
            spec=run.spec,
            job=run.job,
            budget=estimate_budget(run.spec.budget),
        ),
        candidate,
        network_volume_id=plan.network_volume_id,
    )
    request = steps.pod
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
    elif steps.network_volume_name is not None:
        logger.info(
            "[dry-run] network volume %r: its datacenter is looked up when provisioning",
            steps.network_volume_name,
        )
    for label, commands in (("setup", steps.setup), ("preflight", steps.preflight)):
        for command in commands:
            logger.info("[dry-run] would run %s: %s", label, run.redact(command))
    for secret in steps.secrets:
        logger.info("[dry-run] would write secret %s to %s", secret.name, secret.destination)
    for staging in steps.staging:
        logger.info(
            "[dry-run] would push %s -> %s (excludes: %s)",
            staging.source,
            staging.destination,
            ", ".join(staging.excludes) or "none",
        )
    logger.info("[dry-run] would launch %s, log %s", steps.script_path, steps.log_path)
    for artifact in steps.artifacts:
        logger.info(
            "[dry-run] would pull %s -> %s%s",
            artifact.remote_path,
            artifact.local_path,
            " (--delete)" if artifact.delete else "",
        )
    logger.info("[dry-run] then %s on success, %s on failure", steps.on_success, steps.on_failure)
    return candidate

"""A run's phases on the pod, in order: wait until it is ready, then setup, secrets, staging,
preflight, launch and monitor, then pull the log and artifacts.

`run_on_pod` is the orchestrator: each phase below takes what it needs and returns what it
produced, and only `run_on_pod` writes that into the RunRecord (which the cleanup and the
manifest read, also after a failure).
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from collections.abc import Callable

import attrs

from pegboard.domain.gpujob import plan as run_plan
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.templates import RenderedCommand, RenderedJob, make_builtins, render_job
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .artifact_pull import pull
from .phases import (
    JobPaths,
    MetricsSampler,
    PodNeverReady,
    job_paths,
    launch,
    monitor,
    pod_is_gone,
    run_commands,
    secret_payload,
    wait_until_ready,
)
from .pod_snapshots import capture_start
from .provisioning import write_pointer
from .run_state import PodClaim, PodSession, RunContext, RunProgress, RunRecord

logger = logging.getLogger(__name__)


def run_on_pod(run: RunContext, progress: RunProgress, claim: PodClaim, record: RunRecord) -> None:
    assert run.backend is not None and claim.pod_id is not None
    progress.enter(Phase.READY)
    configured = run.request.ssh_ready_timeout_sec or run.spec.budget.ssh_ready_timeout_sec
    timeout = min(float(configured), max(0.0, progress.budget.remaining(run.clock.monotonic())))
    try:
        status, shell = wait_until_ready(
            run.backend.cloud,
            claim.pod_id,
            open_shell=run.backend.open_shell,
            clock=run.clock,
            timeout_sec=timeout,
            timing=run.deps.timing,
            probe=not (claim.created and run.backend.create_proves_shell),
        )
    except PodNeverReady:
        record.never_ready = True  # the lifecycle deletes it: nothing is on it
        raise
    record.session = PodSession(status=status, shell=shell)  # from here the cleanup closes it
    write_pointer(run, claim, status.desired_status)
    sync = run.backend.open_sync(status)
    progress.use_price(status.cost_per_hour_usd, "pod_describe")
    job, pod_dir = _job_on_pod(run, status)
    record.session = PodSession(status=status, shell=shell, sync=sync, pod_dir=pod_dir)
    record.job = job
    capture_start(run, status, shell)
    for phase in run_plan.remote_phases(run.spec):
        progress.enter(phase)
        if phase is Phase.SETUP:
            _run_phase_commands(run, progress, shell, job, job.setup, "setup")
        elif phase is Phase.SECRETS:
            _write_secrets(run, shell, job)
        elif phase is Phase.STAGING:
            _stage(run, progress, sync, job)
        elif phase is Phase.PREFLIGHT:
            _run_phase_commands(run, progress, shell, job, job.all_preflight, "preflight")
        elif phase is Phase.LAUNCH:
            record.paths = job_paths(job.run)
            _launch(run, shell, job, record.paths)
            record.script_started = True
        elif phase is Phase.MONITOR:
            assert record.paths is not None
            record.remote_exit_code = _monitor(run, progress, shell, job, record.paths, claim)
    progress.enter(Phase.PULL)
    pulled = pull(run, sync, job, success=True)
    record.artifacts.extend(pulled.artifacts)
    pulled.check()


def _job_on_pod(run: RunContext, status: PodStatus) -> tuple[RenderedJob, str | None]:
    """The job re-rendered with `{volume_mount}` = where the volume really is (local provider),
    and the pod's directory on this machine; the loaded job unchanged elsewhere."""
    root = status.workspace_root
    if not root or root == run.spec.storage.volume_mount:
        return run.job, None
    pod_dir = posixpath.dirname(posixpath.dirname(root.rstrip("/"))) or None
    spec = attrs.evolve(run.spec, storage=attrs.evolve(run.spec.storage, volume_mount=root))
    builtins = make_builtins(
        spec,
        document=run.document,
        config_path=run.job.config_path,
        home=run.deps.home,
        run_stamp=posixpath.basename(run.job.run_dir),
    )
    job = render_job(spec, cli_vars=run.request.cli_vars, builtins=builtins, document=run.document)
    logger.info("[ready] {volume_mount} is %s on this pod", root)
    return job, pod_dir


def _job_output(run: RunContext) -> Callable[[bytes], None]:
    """The job's bytes to stdout; a closed stdout (`| head`) must not fail the job."""
    closed = False

    def write(chunk: bytes) -> None:
        nonlocal closed
        if closed:
            return
        try:
            run.deps.job_output(chunk)
        except (BrokenPipeError, ValueError, OSError) as exc:
            closed = True
            logger.warning("[monitor] stdout closed (%s); the job goes on, its log is pulled", exc)

    return write


def _tool_output(run: RunContext) -> Callable[[bytes], None]:
    sink = run.deps.tool_output
    return sink if sink is not None else (lambda _chunk: None)


def _run_phase_commands(
    run: RunContext,
    progress: RunProgress,
    shell: RemoteShell,
    job: RenderedJob,
    commands: tuple[RenderedCommand, ...],
    label: str,
) -> None:
    """Setup and preflight run the same way; only the commands and the log label differ.
    Their output goes to stderr with every secret value masked."""
    output = run.redact.stream(_tool_output(run))
    try:
        run_commands(
            shell,
            commands,
            label=label,
            remote_env=job.remote_env,
            budget=progress.budget,
            clock=run.clock,
            on_output=output,
            redact=run.redact,
        )
    finally:
        output.flush()


def _write_secrets(run: RunContext, shell: RemoteShell, job: RenderedJob) -> None:
    for secret in job.secrets:
        data = secret_payload(
            secret,
            environ=run.deps.environ,
            read_local_file=run.deps.read_local_file,
            redact=run.redact,
        )
        shell.write_file(secret.destination, data, mode=int(secret.mode, 8))
        logger.info("[secrets] %s -> %s (mode %s)", secret.name, secret.destination, secret.mode)


def _stage(run: RunContext, progress: RunProgress, sync: FileSync, job: RenderedJob) -> None:
    for staging in job.staging:
        started = run.clock.monotonic()
        result = sync.push(
            staging.source,
            staging.destination,
            excludes=staging.excludes,
            delete=staging.delete,
            timeout=max(1.0, progress.budget.remaining(run.clock.monotonic())),
        )
        logger.info(
            "[staging] %s: %s -> %s, %d files, %d bytes",
            staging.label,
            staging.source,
            staging.destination,
            result.files,
            result.bytes_transferred,
        )
        run.recorder.event(
            "staging_completed",
            label=staging.label,
            files=result.files,
            bytes_transferred=result.bytes_transferred,
            duration_sec=round(run.clock.monotonic() - started, 3),
        )


def _launch(run: RunContext, shell: RemoteShell, job: RenderedJob, paths: JobPaths) -> None:
    pid = launch(shell, job.run, paths)
    run.recorder.event("remote_job_started", pid=pid, script_path=paths.script)
    logger.info("[launch] %s started (pid %d), log %s", paths.script, pid, paths.log)


def _monitor(
    run: RunContext,
    progress: RunProgress,
    shell: RemoteShell,
    job: RenderedJob,
    paths: JobPaths,
    claim: PodClaim,
) -> int | None:
    """Stream the log until the job ends; the remote exit code of a job that succeeded."""
    assert run.backend is not None and claim.pod_id is not None
    cloud, pod_id = run.backend.cloud, claim.pod_id
    telemetry = run.spec.telemetry
    sampler: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if telemetry.enabled:
        sampler = MetricsSampler(
            shell,
            volume_mount=job.volume_mount,
            clock=run.clock,
            interval_sec=float(telemetry.sample_interval_sec),
            record=run.recorder.metrics,
        )
    output = run.redact.stream(_job_output(run))  # the job's log, secrets masked
    try:
        with sampler:
            result = monitor(
                shell,
                job.run,
                paths,
                budget=progress.budget,
                clock=run.clock,
                timing=run.deps.timing,
                job_output=output,
                emit=run.recorder.event,
                pod_gone=lambda: pod_is_gone(cloud, pod_id),
            )
    finally:
        output.flush()
    run.recorder.event(
        "remote_job_succeeded",
        reason=result.verdict.reason,
        exit_code=result.verdict.exit_code,
    )
    return result.verdict.exit_code

"""A run's phases on the pod, in order: wait until it is ready, then setup, secrets, staging,
preflight, launch and monitor, then pull the log and artifacts.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from collections.abc import Callable

import attrs

from pegboard.domain.gpujob import plan as run_plan
from pegboard.domain.gpujob.plan import Phase
from pegboard.domain.gpujob.templates import RenderedCommand, make_builtins, render_job
from pegboard.domain.ports.gpu_cloud import PodStatus

from .artifact_pull import pull
from .phases import (
    MetricsSampler,
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
from .run_state import RunState

logger = logging.getLogger(__name__)


def run_on_pod(run: RunState) -> None:
    assert run.backend is not None and run.pod_id is not None
    run.enter(Phase.READY)
    configured = run.request.ssh_ready_timeout_sec or run.spec.budget.ssh_ready_timeout_sec
    timeout = min(float(configured), max(0.0, run.budget.remaining(run.clock.monotonic())))
    run.status, run.shell = wait_until_ready(
        run.backend.cloud,
        run.pod_id,
        open_shell=run.backend.open_shell,
        clock=run.clock,
        timeout_sec=timeout,
        timing=run.deps.timing,
    )
    write_pointer(run, run.status.desired_status)
    run.sync = run.backend.open_sync(run.status)
    run.budget = run.budget.with_price(run.status.cost_per_hour_usd, "pod_describe")
    _localize_paths(run, run.status)
    capture_start(run)
    for phase in run_plan.remote_phases(run.spec):
        run.enter(phase)
        _REMOTE_PHASES[phase](run)
    run.enter(Phase.PULL)
    pull(run, success=True)


def _localize_paths(run: RunState, status: PodStatus) -> None:
    """Re-render with `{volume_mount}` = where the volume really is (local provider)."""
    root = status.workspace_root
    if not root or root == run.spec.storage.volume_mount:
        return
    run.pod_dir = posixpath.dirname(posixpath.dirname(root.rstrip("/"))) or None
    spec = attrs.evolve(run.spec, storage=attrs.evolve(run.spec.storage, volume_mount=root))
    builtins = make_builtins(
        spec,
        document=run.document,
        config_path=run.job.config_path,
        home=run.deps.home,
        run_stamp=posixpath.basename(run.job.run_dir),
    )
    run.job = render_job(
        spec, cli_vars=run.request.cli_vars, builtins=builtins, document=run.document
    )
    logger.info("[ready] {volume_mount} is %s on this pod", root)


def _job_output(run: RunState) -> Callable[[bytes], None]:
    """The job's bytes to stdout; a closed stdout (`| head`) must not fail the job."""

    def write(chunk: bytes) -> None:
        if run.output_closed:
            return
        try:
            run.deps.job_output(chunk)
        except (BrokenPipeError, ValueError, OSError) as exc:
            run.output_closed = True
            logger.warning("[monitor] stdout closed (%s); the job goes on, its log is pulled", exc)

    return write


def _tool_output(run: RunState) -> Callable[[bytes], None]:
    sink = run.deps.tool_output
    return sink if sink is not None else (lambda _chunk: None)


def _run_phase_commands(run: RunState, commands: tuple[RenderedCommand, ...], label: str) -> None:
    """Setup and preflight run the same way; only the commands and the log label differ."""
    assert run.shell is not None
    run_commands(
        run.shell,
        commands,
        label=label,
        remote_env=run.job.remote_env,
        budget=run.budget,
        clock=run.clock,
        on_output=_tool_output(run),
        redact=run.redact,
    )


def _setup(run: RunState) -> None:
    _run_phase_commands(run, run.job.setup, "setup")


def _secrets(run: RunState) -> None:
    assert run.shell is not None
    for secret in run.job.secrets:
        data = secret_payload(
            secret,
            environ=run.deps.environ,
            read_local_file=run.deps.read_local_file,
            redact=run.redact,
        )
        run.shell.write_file(secret.destination, data, mode=int(secret.mode, 8))
        logger.info("[secrets] %s -> %s (mode %s)", secret.name, secret.destination, secret.mode)


def _staging(run: RunState) -> None:
    assert run.sync is not None
    for staging in run.job.staging:
        started = run.clock.monotonic()
        result = run.sync.push(
            staging.source,
            staging.destination,
            excludes=staging.excludes,
            delete=staging.delete,
            timeout=max(1.0, run.budget.remaining(run.clock.monotonic())),
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


def _preflight(run: RunState) -> None:
    _run_phase_commands(run, run.job.all_preflight, "preflight")


def _launch(run: RunState) -> None:
    assert run.shell is not None
    paths = run.paths = job_paths(run.job.run)
    pid = launch(run.shell, run.job.run, paths)
    run.script_started = True
    run.recorder.event("remote_job_started", pid=pid, script_path=paths.script)
    logger.info("[launch] %s started (pid %d), log %s", paths.script, pid, paths.log)


def _monitor(run: RunState) -> None:
    assert run.shell is not None and run.paths is not None
    assert run.backend is not None and run.pod_id is not None
    cloud, pod_id = run.backend.cloud, run.pod_id
    telemetry = run.spec.telemetry
    sampler: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if telemetry.enabled:
        sampler = MetricsSampler(
            run.shell,
            volume_mount=run.job.volume_mount,
            clock=run.clock,
            interval_sec=float(telemetry.sample_interval_sec),
            record=run.recorder.metrics,
        )
    with sampler:
        result = monitor(
            run.shell,
            run.job.run,
            run.paths,
            budget=run.budget,
            clock=run.clock,
            timing=run.deps.timing,
            job_output=_job_output(run),
            emit=run.recorder.event,
            pod_gone=lambda: pod_is_gone(cloud, pod_id),
        )
    run.remote_exit_code = result.verdict.exit_code
    run.recorder.event(
        "remote_job_succeeded",
        reason=result.verdict.reason,
        exit_code=result.verdict.exit_code,
    )


_REMOTE_PHASES: dict[Phase, Callable[[RunState], None]] = {
    Phase.SETUP: _setup,
    Phase.SECRETS: _secrets,
    Phase.STAGING: _staging,
    Phase.PREFLIGHT: _preflight,
    Phase.LAUNCH: _launch,
    Phase.MONITOR: _monitor,
}

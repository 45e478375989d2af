"""The `runpod-deploy run` use case: one job through every phase, over the ports.

validate -> provision -> ready -> setup/secrets -> staging -> preflight -> launch -> monitor ->
pull -> lifecycle action -> manifest. Corrections over runpod-deploy 0.8.4 (its §17):
- Ctrl-C and SIGTERM are failures: on_failure runs, the manifest says `interrupted`, exit 130;
- the pod pointer (state file) is written atomically the moment a pod id exists, and only
  removed when the pod is deleted (and only if it still names our pod);
- create retries the next GPU × datacenter candidate, and looks the pod up by name when a
  create failed in a way that may have left one behind;
- the script is delivered as data (no heredoc), runs detached with its pid and exit status
  recorded, and the monitor streams the log: a marker is noticed in ~0.1 s, a dead script in
  ~0.3 s;
- the manifest is always written once the config has loaded (dry runs, early failures,
  interrupts), with the failing phase and reason, and what was left behind and how to remove it;
- secrets are checked before any pod exists, written 0600 as data, quoted for `source`, and
  redacted from every message and record.
"""

from __future__ import annotations

import contextlib
import json
import logging
import posixpath
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import NotFound, PegboardError, PortError
from pegboard.domain.gpujob import plan as run_plan
from pegboard.domain.gpujob.plan import Phase, RunBudget
from pegboard.domain.gpujob.provisioning import (
    Candidate,
    CandidatePlan,
    decide_resume,
    offline_candidate,
    override_candidate,
    plan_candidates,
    pod_request,
)
from pegboard.domain.gpujob.records import (
    ArtifactRecord,
    DeployMetadata,
    ManifestInput,
    build_manifest,
    pod_pointer,
)
from pegboard.domain.gpujob.spec import JobSpec, LifecycleAction
from pegboard.domain.gpujob.templates import (
    RenderedArtifact,
    RenderedCommand,
    RenderedJob,
    make_builtins,
    render_job,
)
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import (
    POD_TERMINATED,
    CreateOutcomeUnknown,
    GpuCloud,
    PodStatus,
)
from pegboard.domain.ports.remote_shell import RemoteShell

from .job_loading import ReadDocument, load_job
from .phases import (
    JobPaths,
    MetricsSampler,
    PhaseFailed,
    Redactor,
    Timing,
    job_paths,
    launch,
    monitor,
    run_commands,
    secret_payload,
    wait_until_ready,
)
from .run_records import PodPointer, RunRecorder

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
OFFLINE_POD_ID = "<pod-id>"


@attrs.frozen
class RunRequest:
    """`runpod-deploy run` flags."""

    config_path: Path
    cli_vars: Mapping[str, str] = attrs.field(factory=dict)
    dry_run: bool = False
    offline: bool = False  # implies dry_run
    print_run_dir: bool = False
    cost_cap_usd: float | None = None
    max_runtime_minutes: int | None = None
    ssh_ready_timeout_sec: int | None = None
    force_fresh: bool = False
    gpu_id: str | None = None
    datacenter_id: str | None = None
    max_gpu_price_usd: float | None = None


@attrs.frozen
class Backend:
    """One provider: its GpuCloud and how to reach a pod's shell and files."""

    cloud: GpuCloud
    open_shell: Callable[[PodStatus], RemoteShell]
    open_sync: Callable[[PodStatus], FileSync]


@attrs.frozen
class RunDeps:
    """What the use case needs from the outside world (the container builds it)."""

    read_document: ReadDocument
    backend_for: Callable[[str], Backend]  # provider name -> Backend; UsageError if unavailable
    clock: Clock
    environ: Mapping[str, str]
    random_hex: Callable[[], str]
    job_output: Callable[[bytes], None]  # the job's log, raw bytes, to stdout
    result_line: Callable[[str], None]  # a result line on stdout (RUN_DIR=...)
    home: str
    tool_version: str
    deploy_metadata: Callable[[str], DeployMetadata]  # project root -> git/lockfile facts
    read_local_file: Callable[[str], bytes]
    tool_output: Callable[[bytes], None] | None = None  # setup/preflight output (stderr)
    timing: Timing = attrs.field(factory=Timing)


@attrs.frozen
class RunResult:
    exit_code: int
    outcome: str
    run_dir: str | None
    manifest_path: str | None
    failure_phase: str | None = None
    failure_reason: str | None = None


def run_job(request: RunRequest, deps: RunDeps) -> RunResult:
    """Run one job; config and usage errors raise (exit 2), everything later is a RunResult."""
    now = deps.clock.now()
    loaded = load_job(
        config_path=request.config_path,
        read_document=deps.read_document,
        cli_vars=request.cli_vars,
        home=deps.home,
        now=datetime.fromtimestamp(now, UTC),
        unique_suffix=deps.random_hex(),
        cost_cap_usd=request.cost_cap_usd,
        max_runtime_minutes=request.max_runtime_minutes,
    )
    # An unusable provider is a usage error (exit 2) before anything starts.
    backend = None if request.offline else deps.backend_for(str(loaded.spec.pod.provider))
    if request.print_run_dir:
        deps.result_line(f"RUN_DIR={loaded.job.run_dir}")
    logger.info("%s", loaded.budget.summary())
    run = _Run(request, deps, loaded.document, loaded.spec, loaded.job)
    run.backend = backend
    return run.execute()


class _Run:
    """The state of one run as it moves through the phases (mutable on purpose)."""

    def __init__(
        self,
        request: RunRequest,
        deps: RunDeps,
        document: SourceDocument,
        spec: JobSpec,
        job: RenderedJob,
    ) -> None:
        self.request = request
        self.deps = deps
        self.document = document
        self.spec = spec
        self.job = job
        self.clock = deps.clock
        self.dry_run = request.dry_run or request.offline
        self.recorder = RunRecorder(Path(job.run_dir), deps.clock)
        self.pointer = PodPointer(Path(job.state_file))
        self.redact = Redactor()
        self.started = deps.clock.monotonic()
        max_runtime = spec.budget.max_runtime_minutes
        self.budget = RunBudget(
            started_at=self.started,
            cost_cap_usd=spec.budget.cost_cap_usd,
            price_per_hour_usd=spec.budget.assumed_hourly_rate_usd,
            price_source="assumed_rate",
            max_runtime_sec=None if max_runtime is None else max_runtime * 60.0,
        )
        self.backend: Backend | None = None
        self.candidate: Candidate | None = None
        self.pod_id: str | None = None
        self.status: PodStatus | None = None
        self.shell: RemoteShell | None = None
        self.sync: FileSync | None = None
        self.pod_dir: str | None = None
        self.resumed = False
        self.script_started = False
        self.phase: Phase = Phase.VALIDATE
        self.phase_started = self.started
        self.durations: dict[str, float] = {}
        self.failed = False
        self.outcome = "succeeded"
        self.failure_phase: str | None = None
        self.failure_reason: str | None = None
        self.remote_exit_code: int | None = None
        self.artifacts: list[ArtifactRecord] = []
        self.action: LifecycleAction | None = None
        self.left_behind: list[str] = []
        self.final_state: str | None = None
        self.metadata = DeployMetadata()
        self.output_closed = False

    # --- the run ---------------------------------------------------------------------------

    def execute(self) -> RunResult:
        unexpected: BaseException | None = None
        try:
            self._validate()
            if self.dry_run:
                self._dry_run()
                self.outcome = "dry_run"
            else:
                self._provision()
                self._on_pod()
        except KeyboardInterrupt:
            self._fail("interrupted (SIGINT/SIGTERM)", outcome="interrupted")
        except PhaseFailed as exc:
            if exc.exit_code is not None:
                self.remote_exit_code = exc.exit_code
            self._fail(str(exc))
        except (PegboardError, OSError) as exc:
            self._fail(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a bug: still clean up and record, then surface it
            self._fail(f"internal error: {type(exc).__name__}: {exc}")
            unexpected = exc
        self._end_phase()
        self._finish()
        manifest_path = self._write_manifest()
        if unexpected is not None:
            raise unexpected
        code = EXIT_OK
        if self.outcome == "interrupted":
            code = EXIT_INTERRUPTED
        elif self.failed:
            code = EXIT_FAILED
        if self.failed:
            logger.error("[run] FAILED in %s: %s", self.failure_phase, self.failure_reason)
        else:
            logger.info("[run] %s; records in %s", self.outcome, self.job.run_dir)
        return RunResult(
            exit_code=code,
            outcome=self.outcome,
            run_dir=self.job.run_dir,
            manifest_path=manifest_path,
            failure_phase=self.failure_phase,
            failure_reason=self.failure_reason,
        )

    def _fail(self, reason: str, *, outcome: str = "failed") -> None:
        if self.failed:
            return
        self.failed = True
        self.outcome = outcome
        self.failure_phase = str(self.phase)
        self.failure_reason = self.redact(reason)
        self.recorder.event(
            "run_failed", phase=self.failure_phase, reason=self.failure_reason, outcome=outcome
        )

    def _enter(self, phase: Phase) -> None:
        self._end_phase()
        self.phase = phase
        self.phase_started = self.clock.monotonic()
        exceeded = self.budget.exceeded_reason(self.phase_started)
        if exceeded is not None and phase not in (Phase.PULL, Phase.LIFECYCLE, Phase.MANIFEST):
            raise PhaseFailed(exceeded)

    def _end_phase(self) -> None:
        elapsed = self.clock.monotonic() - self.phase_started
        key = str(self.phase)
        self.durations[key] = self.durations.get(key, 0.0) + elapsed
        self.phase_started = self.clock.monotonic()

    # --- validate --------------------------------------------------------------------------

    def _validate(self) -> None:
        self.phase = Phase.VALIDATE
        missing = [p for p in self.job.required_paths if not Path(p).exists()]
        if missing:
            raise PhaseFailed("required local path(s) missing: " + ", ".join(missing))
        if self.request.offline:
            return  # no secrets read, no git: sentinels only
        for secret in self.job.secrets:
            # Checked before any pod exists (0.8.4 found a missing one after provisioning).
            secret_payload(
                secret,
                environ=self.deps.environ,
                read_local_file=self.deps.read_local_file,
                redact=self.redact,
            )
        if self.spec.telemetry.capture_local_git or self.spec.telemetry.capture_payload_lockfile:
            self.metadata = self.deps.deploy_metadata(self.job.project_root)

    # --- dry runs --------------------------------------------------------------------------

    def _dry_run(self) -> None:
        self._enter(Phase.PROVISION)
        if self.request.offline:
            plan = self._override_plan() or offline_candidate(self.spec)
        else:
            assert self.backend is not None
            plan = self._candidate_plan(self.backend.cloud)
        if not plan.candidates:
            raise PhaseFailed(plan.no_candidate_message())
        self.candidate = plan.candidates[0]
        request = pod_request(self.spec, self.candidate, name=self.job.run_id)
        logger.info(
            "[dry-run] would create pod %s: %s x%d in %s, image %s",
            request.name,
            request.gpu_id,
            request.gpu_count,
            request.datacenter_id,
            request.image,
        )
        for label, commands in (("setup", self.job.setup), ("preflight", self.job.all_preflight)):
            for command in commands:
                logger.info("[dry-run] would run %s: %s", label, self.redact(command.command))
        for secret in self.job.secrets:
            logger.info("[dry-run] would write secret %s to %s", secret.name, secret.destination)
        for staging in self.job.staging:
            logger.info(
                "[dry-run] would push %s -> %s (excludes: %s)",
                staging.source,
                staging.destination,
                ", ".join(staging.excludes) or "none",
            )
        logger.info(
            "[dry-run] would launch %s, log %s", self.job.run.script_path, self.job.run.log_path
        )
        for artifact in self.job.artifacts:
            logger.info(
                "[dry-run] would pull %s -> %s%s",
                artifact.remote_path,
                artifact.local_path,
                " (--delete)" if artifact.delete else "",
            )
        logger.info(
            "[dry-run] then %s on success, %s on failure",
            self.spec.lifecycle.on_success,
            self.spec.lifecycle.on_failure,
        )

    def _override_plan(self) -> CandidatePlan | None:
        if self.request.gpu_id and self.request.datacenter_id:
            return override_candidate(self.request.gpu_id, self.request.datacenter_id)
        return None

    def _candidate_plan(self, cloud: GpuCloud) -> CandidatePlan:
        override = self._override_plan()
        if override is not None:
            return override
        pod = self.spec.pod
        stock = cloud.gpu_availability(
            gpu_ids=pod.gpu_order, datacenter_ids=pod.datacenters, cloud_type=str(pod.cloud_type)
        )
        prices: dict[str, float] = {}
        try:
            prices = cloud.gpu_prices(cloud_type=str(pod.cloud_type), spot=pod.spot)
        except PortError as exc:
            logger.warning("[provision] GPU prices unavailable (%s); price cap not checked", exc)
        if self.request.max_gpu_price_usd is not None and not prices:
            logger.warning("[provision] no GPU prices known: --max-gpu-price cannot be checked")
        plan = plan_candidates(
            gpu_order=pod.gpu_order,
            datacenters=pod.datacenters,
            stock=stock,
            prices=prices,
            max_gpu_price_usd=self.request.max_gpu_price_usd,
        )
        for skipped in plan.skipped:
            logger.info(
                "[provision] skip %s @ %s: %s",
                skipped.gpu_id,
                skipped.datacenter_id,
                skipped.reason,
            )
        return plan

    # --- provision -------------------------------------------------------------------------

    def _provision(self) -> None:
        self._enter(Phase.PROVISION)
        assert self.backend is not None
        cloud = self.backend.cloud
        plan = self._candidate_plan(cloud)
        if not plan.candidates:
            raise PhaseFailed(plan.no_candidate_message())
        if self.spec.lifecycle.on_success is LifecycleAction.RECYCLE and self._try_resume(
            cloud, plan.candidates[0]
        ):
            return
        errors: list[str] = []
        for index, candidate in enumerate(plan.candidates):
            request = pod_request(self.spec, candidate, name=self.job.run_id)
            logger.info(
                "[provision] creating pod on %s @ %s", candidate.gpu_id, candidate.datacenter_id
            )
            try:
                handle = cloud.create_pod(request)
            except CreateOutcomeUnknown as exc:
                recovered = self._recover_after_bad_create(cloud, request.name, exc)
                if recovered is not None:
                    self._adopt(recovered.pod_id, candidate)
                    return
                errors.append(f"{candidate.gpu_id}@{candidate.datacenter_id}: {exc}")
            except PortError as exc:
                errors.append(f"{candidate.gpu_id}@{candidate.datacenter_id}: {exc}")
            else:
                self._adopt(handle.pod_id, candidate)
                return
            following = plan.candidates[index + 1] if index + 1 < len(plan.candidates) else None
            if following is not None:
                self.recorder.event(
                    "datacenter_failover",
                    **{"from": candidate.datacenter_id, "to": following.datacenter_id},
                    from_gpu_id=candidate.gpu_id,
                    to_gpu_id=following.gpu_id,
                    reason=errors[-1],
                )
        raise PhaseFailed("pod create failed on every candidate: " + "; ".join(errors))

    def _recover_after_bad_create(
        self, cloud: GpuCloud, name: str, error: Exception
    ) -> PodStatus | None:
        logger.warning(
            "[provision] create failed after it may have made a pod (%s); looking it up by name %s",
            error,
            name,
        )
        try:
            found = cloud.find_pods(name=name)
        except PortError as exc:
            self.left_behind.append(
                f"a pod named {name!r} may exist (create failed: {error}; lookup failed: {exc}); "
                "check the provider's pod list"
            )
            return None
        for extra in found[1:]:
            self.left_behind.append(f"extra pod {extra.pod_id} named {name!r}")
        return found[0] if found else None

    def _adopt(self, pod_id: str, candidate: Candidate) -> None:
        self.pod_id = pod_id
        self.candidate = candidate
        self._write_pointer("CREATED")
        self.recorder.event(
            "gpu_selected", gpu_id=candidate.gpu_id, datacenter_id=candidate.datacenter_id
        )
        self.recorder.event("pod_created", pod_id=pod_id)
        logger.info("[provision] pod %s (state file %s)", pod_id, self.job.state_file)

    def _try_resume(self, cloud: GpuCloud, first: Candidate) -> bool:
        pointer = self.pointer.read()
        if pointer is None or pointer.get("provider", cloud.provider) != cloud.provider:
            return False
        old = str(pointer.get("pod_id", ""))
        if self.request.force_fresh:
            logger.info("[recycle] --force-fresh: deleting paused pod %s", old)
            self._terminate_quietly(cloud, old)
            self.pointer.remove_if_points_at(old)
            return False
        try:
            status: PodStatus | None = cloud.get_pod(old)
        except NotFound:
            status = None
        decision = decide_resume(
            pointer=pointer, status=status, candidate=first, image=self.spec.pod.image
        )
        logger.info("[recycle] %s: %s", old, decision.reason)
        if decision.terminate_old:
            self._terminate_quietly(cloud, old)
            self.pointer.remove_if_points_at(old)
        if not decision.resume:
            if status is None:
                self.pointer.remove_if_points_at(old)
            return False
        try:
            cloud.resume_pod(old, gpu_count=self.spec.pod.gpu_count)
        except PortError as exc:
            logger.warning("[recycle] resume of %s failed (%s); creating a fresh pod", old, exc)
            return False
        self.resumed = True
        self._adopt(old, first)
        self.recorder.event(
            "pod_resumed", pod_id=old, gpu_id=first.gpu_id, datacenter_id=first.datacenter_id
        )
        return True

    def _terminate_quietly(self, cloud: GpuCloud, pod_id: str) -> None:
        try:
            cloud.terminate_pod(pod_id)
        except PortError as exc:
            logger.warning("[recycle] could not delete pod %s: %s", pod_id, exc)
            self.left_behind.append(f"old pod {pod_id} could not be deleted: {exc}")

    def _write_pointer(self, status: str, *, lifecycle_action: str | None = None) -> None:
        assert self.pod_id is not None and self.candidate is not None and self.backend
        self.pointer.write(
            pod_pointer(
                pod_id=self.pod_id,
                provider=self.backend.cloud.provider,
                gpu_id=self.candidate.gpu_id,
                datacenter_id=self.candidate.datacenter_id,
                image=self.spec.pod.image,
                run_id=self.job.run_id,
                run_dir=self.job.run_dir,
                config_path=self.job.config_path,
                status=status,
                updated_at=self.clock.now(),
                lifecycle_action=lifecycle_action,
            )
        )

    # --- on the pod ------------------------------------------------------------------------

    def _on_pod(self) -> None:
        assert self.backend is not None and self.pod_id is not None
        self._enter(Phase.READY)
        configured = self.request.ssh_ready_timeout_sec or self.spec.budget.ssh_ready_timeout_sec
        timeout = min(float(configured), max(0.0, self.budget.remaining(self.clock.monotonic())))
        self.status, self.shell = wait_until_ready(
            self.backend.cloud,
            self.pod_id,
            open_shell=self.backend.open_shell,
            clock=self.clock,
            timeout_sec=timeout,
            timing=self.deps.timing,
        )
        self._write_pointer(self.status.desired_status)
        self.sync = self.backend.open_sync(self.status)
        self.budget = self.budget.with_price(self.status.cost_per_hour_usd, "pod_describe")
        self._localize_paths(self.status)
        self._capture_start()
        for phase in run_plan.remote_phases(self.spec):
            self._enter(phase)
            getattr(self, f"_phase_{phase}")()
        self._enter(Phase.PULL)
        self._pull(success=True)

    def _localize_paths(self, status: PodStatus) -> None:
        """Re-render with `{volume_mount}` = where the volume really is (local provider)."""
        root = status.workspace_root
        if not root or root == self.spec.storage.volume_mount:
            return
        self.pod_dir = posixpath.dirname(posixpath.dirname(root.rstrip("/"))) or None
        spec = attrs.evolve(self.spec, storage=attrs.evolve(self.spec.storage, volume_mount=root))
        builtins = make_builtins(
            spec,
            document=self.document,
            config_path=self.job.config_path,
            home=self.deps.home,
            run_stamp=posixpath.basename(self.job.run_dir),
        )
        self.job = render_job(
            spec, cli_vars=self.request.cli_vars, builtins=builtins, document=self.document
        )
        logger.info("[ready] {volume_mount} is %s on this pod", root)

    def _job_output(self, chunk: bytes) -> None:
        """The job's bytes to stdout; a closed stdout (`| head`) must not fail the job."""
        if self.output_closed:
            return
        try:
            self.deps.job_output(chunk)
        except (BrokenPipeError, ValueError, OSError) as exc:
            self.output_closed = True
            logger.warning("[monitor] stdout closed (%s); the job goes on, its log is pulled", exc)

    def _tool_output(self) -> Callable[[bytes], None]:
        sink = self.deps.tool_output
        return sink if sink is not None else (lambda _chunk: None)

    def _run_phase_commands(self, commands: tuple[RenderedCommand, ...], label: str) -> None:
        """Setup and preflight run the same way; only the commands and the log label differ."""
        assert self.shell is not None
        run_commands(
            self.shell,
            commands,
            label=label,
            remote_env=self.job.remote_env,
            budget=self.budget,
            clock=self.clock,
            on_output=self._tool_output(),
            redact=self.redact,
        )

    def _phase_setup(self) -> None:
        self._run_phase_commands(self.job.setup, "setup")

    def _phase_secrets(self) -> None:
        assert self.shell is not None
        for secret in self.job.secrets:
            data = secret_payload(
                secret,
                environ=self.deps.environ,
                read_local_file=self.deps.read_local_file,
                redact=self.redact,
            )
            self.shell.write_file(secret.destination, data, mode=int(secret.mode, 8))
            logger.info(
                "[secrets] %s -> %s (mode %s)", secret.name, secret.destination, secret.mode
            )

    def _phase_staging(self) -> None:
        assert self.sync is not None
        for staging in self.job.staging:
            started = self.clock.monotonic()
            result = self.sync.push(
                staging.source,
                staging.destination,
                excludes=staging.excludes,
                delete=staging.delete,
                timeout=max(1.0, self.budget.remaining(self.clock.monotonic())),
            )
            logger.info(
                "[staging] %s: %s -> %s, %d files, %d bytes",
                staging.label,
                staging.source,
                staging.destination,
                result.files,
                result.bytes_transferred,
            )
            self.recorder.event(
                "staging_completed",
                label=staging.label,
                files=result.files,
                bytes_transferred=result.bytes_transferred,
                duration_sec=round(self.clock.monotonic() - started, 3),
            )

    def _phase_preflight(self) -> None:
        self._run_phase_commands(self.job.all_preflight, "preflight")

    def _phase_launch(self) -> None:
        assert self.shell is not None
        self.paths: JobPaths = job_paths(self.job.run)
        pid = launch(self.shell, self.job.run, self.paths)
        self.script_started = True
        self.recorder.event("remote_job_started", pid=pid, script_path=self.paths.script)
        logger.info("[launch] %s started (pid %d), log %s", self.paths.script, pid, self.paths.log)

    def _phase_monitor(self) -> None:
        assert self.shell is not None
        telemetry = self.spec.telemetry
        sampler: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        if telemetry.enabled:
            sampler = MetricsSampler(
                self.shell,
                volume_mount=self.job.volume_mount,
                clock=self.clock,
                interval_sec=float(telemetry.sample_interval_sec),
                record=self.recorder.metrics,
            )
        with sampler:
            result = monitor(
                self.shell,
                self.job.run,
                self.paths,
                budget=self.budget,
                clock=self.clock,
                timing=self.deps.timing,
                job_output=self._job_output,
                emit=self.recorder.event,
            )
        self.remote_exit_code = result.verdict.exit_code
        self.recorder.event(
            "remote_job_succeeded",
            reason=result.verdict.reason,
            exit_code=result.verdict.exit_code,
        )

    # --- telemetry snapshots ---------------------------------------------------------------

    def _capture_start(self) -> None:
        telemetry = self.spec.telemetry
        if not telemetry.enabled:
            return
        if telemetry.capture_pod_describe and self.status is not None:
            self.recorder.snapshot("pod_describe_start.json", _describe(self.status))
        if telemetry.capture_remote_env:
            uname = self._remote_text("uname -a")
            python = self._remote_text("python3 --version 2>&1 || python --version 2>&1")
            self.recorder.snapshot(
                "remote_env.json",
                json.dumps(
                    {"remote_uname": uname.strip(), "remote_python_version": python.strip()},
                    indent=2,
                ),
            )
        if telemetry.capture_nvidia_smi:
            text = self._remote_text("nvidia-smi", quiet_failure=True)
            if text:
                self.recorder.snapshot("nvidia_smi_start.txt", text)

    def _capture_end(self) -> None:
        telemetry = self.spec.telemetry
        if not telemetry.enabled or self.shell is None:
            return
        if telemetry.capture_nvidia_smi:
            text = self._remote_text("nvidia-smi", quiet_failure=True)
            if text:
                self.recorder.snapshot("nvidia_smi_end.txt", text)
        if telemetry.capture_dmesg:
            text = self._remote_text("dmesg 2>/dev/null | tail -n 200", quiet_failure=True)
            if text:
                self.recorder.snapshot("dmesg_tail.txt", text)

    def _remote_text(self, command: str, *, quiet_failure: bool = False) -> str:
        if self.shell is None:
            return ""
        try:
            result = self.shell.run(command, timeout=30)
        except PortError as exc:
            logger.debug("[telemetry] %s failed: %s", command, exc)
            return ""
        if result.exit_code != 0 and quiet_failure:
            return ""
        return result.stdout.decode(errors="replace")

    # --- pull, lifecycle, manifest ---------------------------------------------------------

    def _pull(self, *, success: bool) -> None:
        """The log first (keeping its basename), then each artifact.

        A required artifact that fails fails the run on the success path only.
        """
        assert self.sync is not None
        run_dir = self.job.run_dir
        try:
            self.sync.pull(self.job.run.log_path, run_dir + "/", timeout=600)
        except PortError as exc:
            self.recorder.event(
                "remote_log_pull_failed", path=self.job.run.log_path, error=str(exc)[:500]
            )
            logger.warning("[pull] could not pull the job log: %s", exc)
        required_failures = []
        for artifact in self.job.artifacts:
            self.recorder.event("artifact_pull_started", label=artifact.label)
            started = self.clock.monotonic()
            try:
                result = self.sync.pull(
                    artifact.remote_path,
                    artifact.local_path,
                    excludes=artifact.excludes,
                    delete=artifact.delete,
                    timeout=1800,
                )
            except PortError as exc:
                duration = self.clock.monotonic() - started
                self.artifacts.append(
                    _artifact_record(artifact, "failed", None, duration, error=str(exc))
                )
                self.recorder.event(
                    "artifact_pull_failed",
                    label=artifact.label,
                    duration_sec=round(duration, 3),
                    error=str(exc)[:500],
                )
                logger.warning("[pull] %s failed: %s", artifact.label, exc)
                if artifact.required and success:
                    required_failures.append(f"{artifact.label}: {exc}")
                continue
            duration = self.clock.monotonic() - started
            self.artifacts.append(
                _artifact_record(
                    artifact, "success", result.bytes_transferred, duration, files=result.files
                )
            )
            self.recorder.event(
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
        if required_failures:
            raise PhaseFailed("required artifact(s) failed: " + "; ".join(required_failures))

    def _finish(self) -> None:
        """After success or failure: best-effort pulls, capture, lifecycle action. Never raises."""
        if self.dry_run or self.pod_id is None or self.backend is None:
            self._note_possible_leftovers()
            return
        if (
            self.failed
            and self.script_started
            and self.sync is not None
            and self.failure_phase != Phase.PULL
        ):
            self._shielded("pull", lambda: self._pull(success=False))
        if self.script_started:
            self._shielded("capture", self._capture_end)
        if self.shell is not None:
            self._shielded("close", self.shell.close)
        self.phase = Phase.LIFECYCLE
        self.phase_started = self.clock.monotonic()
        self._shielded("lifecycle", self._lifecycle)
        self._end_phase()
        self._note_possible_leftovers()

    def _note_possible_leftovers(self) -> None:
        for note in self.left_behind:
            logger.warning("[lifecycle] left behind: %s", note)

    def _shielded(self, what: str, step: Callable[[], None]) -> None:
        try:
            step()
        except KeyboardInterrupt:
            logger.warning("[%s] interrupted again; continuing the cleanup", what)
            if not self.failed:
                self._fail("interrupted (SIGINT/SIGTERM)", outcome="interrupted")
        except Exception as exc:
            logger.warning("[%s] failed: %s", what, exc)

    def _lifecycle(self) -> None:
        assert self.backend is not None and self.pod_id is not None
        cloud = self.backend.cloud
        action = run_plan.action_for(self.spec, failed=self.failed)
        self.action = action
        pod_id = self.pod_id
        logger.info(
            "[lifecycle] %s pod %s (%s)", action, pod_id, "failure" if self.failed else "success"
        )
        try:
            if action is LifecycleAction.DELETE:
                cloud.terminate_pod(pod_id)
            elif action in (LifecycleAction.STOP, LifecycleAction.RECYCLE):
                cloud.stop_pod(pod_id)
        except PortError as exc:
            self.left_behind.append(
                f"pod {pod_id} is still there: {action} failed ({exc}); remove it with: "
                f"runpod-deploy cleanup --state-file {self.job.state_file} --mode delete"
            )
            self.recorder.event(
                "lifecycle_failed", action=str(action), pod_id=pod_id, error=str(exc)[:500]
            )
            self._record_final_state(cloud, pod_id)
            return
        self.recorder.event("lifecycle_action", action=str(action), pod_id=pod_id)
        self._record_final_state(cloud, pod_id)
        if run_plan.keeps_pointer(action):
            self._write_pointer(self.final_state or "UNKNOWN", lifecycle_action=str(action))
            note = run_plan.leftover_note(
                action=action,
                pod_id=pod_id,
                provider=cloud.provider,
                state_file=self.job.state_file,
                volume_gb=self.status.volume_gb if self.status else None,
                pod_dir=self.pod_dir,
            )
            if note:
                self.left_behind.append(note)
        else:
            self.pointer.remove_if_points_at(pod_id)
            logger.info("[lifecycle] pod %s deleted; disk released", pod_id)

    def _record_final_state(self, cloud: GpuCloud, pod_id: str) -> None:
        try:
            self.final_state = cloud.get_pod(pod_id).desired_status
        except NotFound:
            self.final_state = POD_TERMINATED
        except PortError as exc:
            logger.warning("[lifecycle] final state unknown: %s", exc)

    def _write_manifest(self) -> str | None:
        spec, job = self.spec, self.job
        candidate = self.candidate
        wall = self.clock.monotonic() - self.started
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
            cost_cap_usd=self.budget.cost_cap_usd,
            provider=(self.backend.cloud.provider if self.backend else str(spec.pod.provider)),
            cloud_type=str(spec.pod.cloud_type),
            gpu_count=spec.pod.gpu_count,
            tool_version=self.deps.tool_version,
            pulled_at=self.clock.now(),
            failed=self.failed,
            outcome=self.outcome,
            dry_run=self.dry_run,
            datacenter_id=candidate.datacenter_id if candidate else None,
            gpu_id=candidate.gpu_id if candidate else None,
            gpu_price_per_hour_usd=None if self.dry_run else self.budget.price_per_hour_usd,
            gpu_price_source=None if self.dry_run else self.budget.price_source,
            pod_id=self.pod_id if not self.request.offline else OFFLINE_POD_ID,
            pod_final_state=self.final_state,
            pod_resumed=self.resumed,
            wall_time_sec=wall,
            failure_phase=self.failure_phase,
            failure_reason=self.failure_reason,
            remote_exit_code=self.remote_exit_code,
            phase_durations_sec=self.durations,
            lifecycle_action=str(self.action) if self.action else None,
            left_behind="\n".join(self.left_behind) or None,
            state_file=job.state_file,
            deploy_metadata=self.metadata,
            artifacts=self.artifacts,
            telemetry_files=[name for name in self.recorder.files],
        )
        try:
            return str(self.recorder.manifest(build_manifest(data)))
        except OSError as exc:
            logger.error("[manifest] could not write the manifest in %s: %s", job.run_dir, exc)
            return None


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


def _describe(status: PodStatus) -> str:
    data: dict[str, Any] = attrs.asdict(status)
    return json.dumps(data, indent=2)

"""The state of one `runpod-deploy run` as it moves through the phases, and its bookkeeping:
which phase it is in, how long each took, and the first failure (mutable on purpose).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from pathlib import Path

from pegboard.domain.documents import SourceDocument
from pegboard.domain.gpujob.plan import Phase, RunBudget
from pegboard.domain.gpujob.provisioning import Candidate
from pegboard.domain.gpujob.records import ArtifactRecord, DeployMetadata
from pegboard.domain.gpujob.spec import JobSpec, LifecycleAction
from pegboard.domain.gpujob.templates import RenderedJob
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .kill_points import kill_point
from .phases import JobPaths, Redactor
from .pod_pointers import PodPointer, run_pointer_path, state_dir
from .run_recorder import RunRecorder
from .run_types import Backend, PhaseFailed, RunDeps, RunRequest

logger = logging.getLogger(__name__)


class RunState:
    """Everything one run knows so far; the phase modules read and update it."""

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
        self.pointer = PodPointer(Path(job.state_file))  # the config's (shared by its runs)
        # This run's own pointer: the one release commands name (never another run's pod).
        self.run_pointer = PodPointer(
            run_pointer_path(state_dir(deps.home), posixpath.basename(job.run_dir))
        )
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
        self.paths: JobPaths | None = None
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

    def fail(self, reason: str, *, outcome: str = "failed") -> None:
        """Record the first failure only: later ones happen while cleaning up after it."""
        if self.failed:
            return
        self.failed = True
        self.outcome = outcome
        self.failure_phase = str(self.phase)
        self.failure_reason = self.redact(reason)
        self.recorder.event(
            "run_failed", phase=self.failure_phase, reason=self.failure_reason, outcome=outcome
        )

    def kill_point(self, point: str) -> None:
        """TEST-ONLY hook (kill_points): a no-op unless a test asked to stop here."""
        kill_point(self.deps.environ, point)

    def enter(self, phase: Phase) -> None:
        """Start `phase`; a spent budget stops the run, except for the phases that clean up."""
        self.kill_point(f"enter-{phase}")
        self.end_phase()
        self.phase = phase
        self.phase_started = self.clock.monotonic()
        exceeded = self.budget.exceeded_reason(self.phase_started)
        if exceeded is not None and phase not in (Phase.PULL, Phase.LIFECYCLE, Phase.MANIFEST):
            raise PhaseFailed(exceeded)

    def end_phase(self) -> None:
        elapsed = self.clock.monotonic() - self.phase_started
        key = str(self.phase)
        self.durations[key] = self.durations.get(key, 0.0) + elapsed
        self.phase_started = self.clock.monotonic()

    def shielded(self, what: str, step: Callable[[], None]) -> None:
        """Run a cleanup step that must not stop the cleanup after it."""
        try:
            step()
        except KeyboardInterrupt:
            logger.warning("[%s] interrupted again; continuing the cleanup", what)
            if not self.failed:
                self.fail("interrupted (SIGINT/SIGTERM)", outcome="interrupted")
        except Exception as exc:
            logger.warning("[%s] failed: %s", what, exc)

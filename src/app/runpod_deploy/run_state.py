"""The state of one `runpod-deploy run`, split by who may change it.

- RunContext (frozen): what the run knows once its config has loaded: the request, its
  dependencies, the parsed spec, its recorder, its two pod pointers, the redactor, the backend.
- RunProgress: the bookkeeping every phase reports into through its methods: the phase it is
  in and how long each took, the budget, the first failure, what was left behind.
- PodClaim: the pod this run holds, filled by provisioning the moment a pod id exists, so
  nothing created is lost track of even when the run is interrupted in the next instant.
- RunRecord: what the phases produced (the pod session, the launched script, the remote exit
  code, the artifacts, the lifecycle action), written by the orchestrators (run_job, on_pod,
  lifecycle_action) from the phases' return values, and read by the manifest.
Phases take the parts they need as arguments and return what they produced.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from pathlib import Path

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import SourceDocument
from pegboard.domain.gpujob.plan import Phase, RunBudget
from pegboard.domain.gpujob.provisioning import Candidate
from pegboard.domain.gpujob.records import ArtifactRecord, DeployMetadata
from pegboard.domain.gpujob.spec import JobSpec, LifecycleAction
from pegboard.domain.gpujob.templates import RenderedJob
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .kill_points import kill_point
from .phases import JobPaths, Redactor
from .pod_pointers import PodPointer, run_pointer_path
from .run_recorder import RunRecorder
from .run_types import Backend, PhaseFailed, RunDeps, RunRequest
from .state_paths import state_paths

logger = logging.getLogger(__name__)


@attrs.frozen
class RunPointers:
    """The config's state file (shared by its runs) and this run's own pointer (the one
    release commands name, never another run's pod)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    config: PodPointer
    run: PodPointer


@attrs.frozen
class RunContext:
    """What one run knows once its config has loaded; the same for every phase."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    request: RunRequest
    deps: RunDeps
    document: SourceDocument
    spec: JobSpec
    job: RenderedJob  # as loaded: its ids and local paths; RunRecord.job has the pod's paths
    recorder: RunRecorder
    pointers: RunPointers
    redact: Redactor
    backend: Backend | None  # None: an offline dry run
    started: float  # monotonic

    @classmethod
    def start(
        cls,
        request: RunRequest,
        deps: RunDeps,
        *,
        document: SourceDocument,
        spec: JobSpec,
        job: RenderedJob,
        backend: Backend | None,
    ) -> RunContext:
        run_stamp = posixpath.basename(job.run_dir)
        redact = Redactor()
        return cls(
            request=request,
            deps=deps,
            document=document,
            spec=spec,
            job=job,
            recorder=RunRecorder(Path(job.run_dir), deps.clock, mask=redact.mask_record),
            pointers=RunPointers(
                config=PodPointer(Path(job.state_file)),
                run=PodPointer(
                    run_pointer_path(state_paths(deps.home, deps.environ).directory, run_stamp)
                ),
            ),
            redact=redact,
            backend=backend,
            started=deps.clock.monotonic(),
        )

    @property
    def clock(self) -> Clock:
        return self.deps.clock

    @property
    def dry_run(self) -> bool:
        return self.request.dry_run or self.request.offline

    def kill_point(self, point: str) -> None:
        """TEST-ONLY hook (kill_points): a no-op unless a test asked to stop here."""
        kill_point(self.deps.environ, point)


class RunProgress:
    """Where the run is, how long each phase took, the budget and the first failure."""

    def __init__(self, context: RunContext) -> None:
        self._context = context
        self._clock = context.clock
        spec = context.spec
        max_runtime = spec.budget.max_runtime_minutes
        self.budget = RunBudget(
            started_at=context.started,
            cost_cap_usd=spec.budget.cost_cap_usd,
            price_per_hour_usd=spec.budget.assumed_hourly_rate_usd,
            price_source="assumed_rate",
            max_runtime_sec=None if max_runtime is None else max_runtime * 60.0,
        )
        self.phase: Phase = Phase.VALIDATE
        self.phase_started = context.started
        self.durations: dict[str, float] = {}
        self.failed = False
        self.outcome = "succeeded"
        self.failure_phase: str | None = None
        self.failure_reason: str | None = None
        self.left_behind: list[str] = []

    def fail(self, reason: str, *, outcome: str = "failed") -> None:
        """Record the first failure only: later ones happen while cleaning up after it."""
        if self.failed:
            return
        self.failed = True
        self.outcome = outcome
        self.failure_phase = str(self.phase)
        self.failure_reason = self._context.redact(reason)
        self._context.recorder.event(
            "run_failed", phase=self.failure_phase, reason=self.failure_reason, outcome=outcome
        )

    def use_price(self, price: float | None, source: str) -> None:
        """Enforce the budget at the real price from now on; an unknown or zero price keeps
        the assumed rate, and says so."""
        note = self.budget.unknown_price_note(price, source)
        if note is not None:
            logger.warning("[budget] %s", note)
        self.budget = self.budget.with_price(price, source)

    def leave(self, note: str) -> None:
        """Something the run could not remove: logged at the end and named in the manifest."""
        self.left_behind.append(note)

    def enter(self, phase: Phase) -> None:
        """Start `phase`; a spent budget stops the run, except for the phases that clean up."""
        self._context.kill_point(f"enter-{phase}")
        self.end_phase()
        self.phase = phase
        self.phase_started = self._clock.monotonic()
        exceeded = self.budget.exceeded_reason(self.phase_started)
        if exceeded is not None and phase not in (Phase.PULL, Phase.LIFECYCLE, Phase.MANIFEST):
            raise PhaseFailed(exceeded)

    def start(self, phase: Phase) -> None:
        """Start a cleanup phase: the time since the last phase ended (best-effort pulls,
        capture) is not counted, and no budget stops it."""
        self.phase = phase
        self.phase_started = self._clock.monotonic()

    def end_phase(self) -> None:
        elapsed = self._clock.monotonic() - self.phase_started
        key = str(self.phase)
        self.durations[key] = self.durations.get(key, 0.0) + elapsed
        self.phase_started = self._clock.monotonic()

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


@attrs.define
class PodClaim:
    """The pod this run holds (None until one exists), and the candidate it was made on."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq

    pod_id: str | None = None
    candidate: Candidate | None = None
    resumed: bool = False
    created: bool = False  # this run's create call made it and said so (not recovered after)
    # The run's pod name once a create failed in a way that may have made a pod anyway: the
    # end of the run looks for it again (create_lookup.py).
    ambiguous_name: str | None = None
    unresolved_create: bool = False  # such a create's outcome is still unknown
    # How many creates failed that way: each may have made one pod of the run's name.
    ambiguous_creates: int = 0
    # When the last such create happened while fewer pods of the run's name were listed than
    # such creates (clock.monotonic()): the listing may show a new pod late, so the end of the
    # run keeps looking until Timing.listing_lag_sec after it, or until it lists one pod per
    # such create.
    unseen_create_at: float | None = None
    # Other pods of the run's name (an ambiguous create's), not yet deleted.
    extra_pod_ids: list[str] = attrs.field(factory=list)
    # Every pod this run made or found under its name, in order (the manifest's pods_created).
    created_pod_ids: list[str] = attrs.field(factory=list)

    def adopt(
        self, pod_id: str, candidate: Candidate, *, resumed: bool = False, created: bool = False
    ) -> None:
        self.pod_id = pod_id
        self.candidate = candidate
        self.resumed = resumed
        self.created = created
        if not resumed:
            self.note_created(pod_id)

    def note_created(self, pod_id: str) -> None:
        if pod_id not in self.created_pod_ids:
            self.created_pod_ids.append(pod_id)


@attrs.frozen
class PodSession:
    """What the ready phase produced: the pod answering, its shell and file sync."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    status: PodStatus
    shell: RemoteShell
    sync: FileSync | None = None  # None until opened (the shell must be closed even so)
    pod_dir: str | None = None  # the local provider's pod directory (for the leftover note)


@attrs.define
class RunRecord:
    """What the phases produced, for the cleanup after them and for the manifest."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq

    job: RenderedJob  # re-rendered once the pod says where its volume really is
    metadata: DeployMetadata = attrs.field(factory=DeployMetadata)
    candidate: Candidate | None = None  # a dry run's pick (a real run's is in its PodClaim)
    session: PodSession | None = None
    paths: JobPaths | None = None
    script_started: bool = False
    remote_exit_code: int | None = None
    artifacts: list[ArtifactRecord] = attrs.field(factory=list)
    action: LifecycleAction | None = None
    final_state: str | None = None
    never_ready: bool = False  # the ready wait timed out: the pod is deleted, whatever on_failure

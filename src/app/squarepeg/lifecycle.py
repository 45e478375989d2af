"""The `squarepeg run` use case: create, wait for start, stream, exit code, clean up, sweep.

It drives the Cluster and Clock ports only. The main thread never blocks on I/O while waiting: a
watch thread feeds pod states into a queue, a LogPump thread copies the log to stdout, and the main
thread reacts to queue messages, so Ctrl-C is handled at once and a second Ctrl-C leaves at once.
In Job mode a failed pod the Job retries (backoffLimit) is followed by its next pod, in turn.
"""

from __future__ import annotations

import queue
import signal
import threading
from typing import BinaryIO, cast

import attrs

from pegboard.app.shared import api_warnings
from pegboard.domain.errors import (
    Interrupted,
    PortError,
    RunnerError,
    Transient,
    Unauthorized,
    Unreachable,
)
from pegboard.domain.kubernetes.names import namespace_in_use
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, ResourceKind
from pegboard.domain.retry import Backoff
from pegboard.domain.squarepeg.create_errors import create_failure_message
from pegboard.domain.squarepeg.exit_codes import RUNNER_FAILED
from pegboard.domain.squarepeg.exit_policy import exit_outcome, terminated_state
from pegboard.domain.squarepeg.resolved_run import ResolvedRun
from pegboard.domain.squarepeg.runner_heartbeat import with_runner_hold

from .interrupts import REPEAT_WINDOW_SECONDS, Abandoned, TwoStageInterrupt, abandon_messages
from .job_pods import FollowedPod, attempts_allowed, job_finished
from .pod_attempt import PUMP_STALL_SECONDS, FollowContext, PodAttempt
from .pod_watch import Message, Msg, PodWatcher
from .result_file import RunReport
from .run_cleanup import Removal, RemovalProgress, delete_or_keep, sweep_if_enabled
from .run_outcome import OutputLoss, RunOutcome
from .runner_heartbeat import RunnerHeartbeat
from .seams import ClusterPorts, Seams
from .startup_events import EVENT_POLL_EVERY, EVENT_POLL_FIRST, EventSurfacer
from .status import StatusUI, raw_stderr_line


def short_run_id(run_id: str) -> str:
    """The stderr tag: the first 8 hex digits of the run id."""
    compact = run_id.replace("-", "")
    return compact[:8] or "run"


def run(
    resolved: ResolvedRun,
    seams: Seams,
    ports: ClusterPorts,
    *,
    dry_run_server: bool,
    report: RunReport | None = None,
) -> int:
    """Entry point for `squarepeg run` (real runs and --dry-run-server); raises PegboardError."""
    ui = StatusUI(
        tag=short_run_id(resolved.run_id),
        stream=seams.stderr,
        quiet=resolved.output.quiet,
        color=resolved.output.color,
        environ=seams.environ,
    )
    api_warnings.route_to(ui.warn)  # the apiserver's Warning headers, as status lines
    cluster = ports.open_cluster(context=resolved.context, lenient_tls=resolved.lenient_tls)
    if dry_run_server:
        from .dry_run_server import server_dry_run

        return server_dry_run(
            resolved, cluster=cluster, ui=ui, stdout=seams.stdout, dump_yaml=seams.dump_yaml
        )
    stdout = seams.stdout  # None when the process was started without one (`>&-`)
    # Raw bytes, never re-encoded: the text stream's buffer (a binary stream given as is).
    sink = cast("BinaryIO | None", getattr(stdout, "buffer", stdout))
    return RunLifecycle(
        resolved, cluster=cluster, clock=ports.clock, ui=ui, stdout=sink, report=report
    ).execute()


class RunLifecycle:
    """One `squarepeg run` against a cluster."""

    def __init__(
        self,
        resolved: ResolvedRun,
        *,
        cluster: Cluster,
        clock: Clock,
        ui: StatusUI,
        stdout: BinaryIO | None,
        reconnect_policy: Backoff | None = None,
        event_poll_first: float = EVENT_POLL_FIRST,
        event_poll_every: float = EVENT_POLL_EVERY,
        pump_stall_seconds: float = PUMP_STALL_SECONDS,
        log_end_grace: float | None = None,
        interrupt_repeat_window: float = REPEAT_WINDOW_SECONDS,
        report: RunReport | None = None,
    ) -> None:
        self.resolved = resolved
        self.report = report  # --result-file: filled as the run goes
        self.cluster = cluster
        self.clock = clock
        self.ui = ui
        self.stdout = stdout
        self.reconnect_policy = reconnect_policy
        self.event_poll_first = event_poll_first
        self.event_poll_every = event_poll_every
        self.pump_stall_seconds = pump_stall_seconds
        self.log_end_grace = log_end_grace
        self.namespace = namespace_in_use(resolved.namespace, None)
        self.kind = resolved.kind
        self.name = resolved.name
        self.container = resolved.container_name
        self.created = False
        self._removal = RemovalProgress()  # how far deleting our resource got (second Ctrl-C)
        self.interrupt = TwoStageInterrupt(
            on_first=self._first_interrupt,
            on_second=self._second_interrupt,
            on_repeat=self._repeated_interrupt,
            repeat_window=interrupt_repeat_window,
        )
        self._queue: queue.Queue[Message] = queue.Queue()
        self._stop_background = threading.Event()
        self._watcher = PodWatcher(cluster, self._queue, self._stop_background)
        self._events = EventSurfacer(
            cluster, ui, startup_timeout_seconds=resolved.startup_timeout_seconds
        )
        self._pod = FollowedPod(
            resolved.name if resolved.kind is ResourceKind.POD else None,
            on_found=lambda pod: self.ui.step(f"job {self.name} created pod {pod}"),
        )
        self._job_uid: str | None = None
        self._heartbeat: RunnerHeartbeat | None = None  # once created
        self._current: PodAttempt | None = None  # the pod followed now
        self._attempt = 1  # Job mode follows each retry: 1-based
        self._running_since: float | None = None  # the first pod's container ran (monotonic)

    # -- the run --------------------------------------------------------------------------------

    def execute(self) -> int:
        """Run to completion; the container's code, 122 / 141 when stdout did not get all of its
        output (see OutputLoss), or RunnerError (125) / Interrupted (130)."""
        target = self.cluster.target()
        self.namespace = namespace_in_use(self.resolved.namespace, target.namespace)
        if self.report is not None:
            self.report.namespace, self.report.context = self.namespace, target.context
        self.ui.banner(target.context, self.namespace)
        outcome: RunOutcome | None = None
        try:
            with self.interrupt.installed():
                outcome = self._run()
                self.interrupt.abandon_allowed = False
        except Abandoned:
            raise Interrupted(self._abandon_messages()[1]) from None
        finally:
            self._stop_background.set()
            self._fill_report(outcome)
        if outcome.interrupted or self.interrupt.first.is_set():
            raise Interrupted("interrupted")
        if outcome.error is not None:
            raise RunnerError(outcome.error)
        if outcome.note:
            self.ui.error(outcome.note)
        if outcome.lost is not None:
            # Never the container's code: a script must be able to tell that stdout is short.
            if outcome.lost.quiet_ok:
                self.ui.warn(outcome.lost.message)
            else:
                self.ui.error(outcome.lost.message)
            return outcome.lost.code
        return outcome.code

    def _fill_report(self, outcome: RunOutcome | None) -> None:
        """What --result-file records of the run (outcome None: it was abandoned)."""
        report = self.report
        if report is None:
            return
        report.name, report.pod, report.created = self.name, self._pod.name, self.created
        report.running_monotonic = self._running_since
        if self._running_since is not None:
            report.output_complete = outcome is not None and outcome.lost is None
        if outcome is not None and outcome.error is None and not outcome.interrupted:
            report.container_exit_code = outcome.code
        if outcome is not None and outcome.error is not None:
            report.error = outcome.error

    def _run(self) -> RunOutcome:
        failure = self._create()
        if failure is not None:
            if not failure.unreachable:
                self._sweep()
            return failure
        outcome = self._follow()
        if self.report is not None:
            self.report.followed_monotonic = self.clock.monotonic()
        self._stop_background.set()
        self._stop_pump()
        if outcome.interrupted:
            self._report_code_on_interrupt()
        self._cleanup()
        self._sweep()
        return outcome

    def _kind_word(self) -> str:
        return self.kind.value.lower()

    # -- create ---------------------------------------------------------------------------------

    def _create(self) -> RunOutcome | None:
        missing = self._missing_log_permission()
        if missing is not None:
            return missing
        self.ui.step(f"creating {self._kind_word()} {self.name!r} in namespace {self.namespace!r}")
        try:
            # Held by this live runner from the first instant: no sweep deletes what it reads.
            manifest = with_runner_hold(self.resolved.manifest, self.clock.now())
            created = self.cluster.create(manifest, namespace=self.namespace)
        except PortError as exc:
            # Nothing of ours exists: a 409 means someone else's resource, never ours to delete.
            message = create_failure_message(
                exc, kind=self.kind, name=self.name, namespace=self.namespace
            )
            return RunOutcome(
                RUNNER_FAILED,
                error=message,
                note="transport" if isinstance(exc, Transient) else None,
                # No sweep after this: it would fail the same way and say it first (issue 12).
                unreachable=isinstance(exc, Unreachable | Unauthorized),
            )
        self.created = True
        if self.report is not None:
            self.report.created_monotonic = self.clock.monotonic()
        meta = created.get("metadata") or {}
        self.name = str(meta.get("name") or self.name)
        if self.kind is ResourceKind.JOB:
            self._job_uid = meta.get("uid")
        else:
            self._pod.name = self.name
            self._pod.uid = meta.get("uid")
        self._heartbeat = RunnerHeartbeat(
            self.cluster,
            self.clock,
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
            stop=self._stop_background,
            notice=self.ui.detail,
        )
        self._heartbeat.start()
        return None  # an interrupt during create is noticed at once by the wait

    def _missing_log_permission(self) -> RunOutcome | None:
        """The output streams through pods/log: without `get` on it the run could only fail
        after creating the pod, so it fails before (one review request; unknown goes on)."""
        if self.cluster.can_i("get", "pods", namespace=self.namespace, subresource="log") is False:
            return RunOutcome(
                RUNNER_FAILED,
                error=(
                    f"missing permission: get pods/log in namespace {self.namespace!r}, which "
                    "squarepeg needs to stream the container's output; nothing was created "
                    f"(ask for it; check with 'kubectl auth can-i get pods/log -n {self.namespace}')"
                ),
            )
        return None

    # -- following the pod, and the Job's retries --------------------------------------------------

    def _follow(self) -> RunOutcome:
        """Follow the pod; in Job mode, each retry pod too. The exit code is the last pod's."""
        attempt = PodAttempt(self._follow_context())
        self._current = attempt
        outcome = attempt.follow()
        self._running_since = attempt.running_since
        lost: OutputLoss | None = None
        while self._job_retries(outcome):
            failed = self._pod.name
            self._attempt += 1
            self.ui.step(
                f"pod {failed} failed (exit {outcome.code}); the Job retries: "
                f"attempt {self._attempt} of {attempts_allowed(self.resolved)}"
            )
            if outcome.note:
                self.ui.detail(outcome.note)
            lost = lost or outcome.lost
            attempt = self._next_attempt(previous=outcome)
            outcome = attempt.follow()
        if lost is not None and outcome.lost is None:
            outcome = attrs.evolve(outcome, lost=lost)  # an earlier pod's output is short
        return outcome

    def _follow_context(self) -> FollowContext:
        return FollowContext(
            resolved=self.resolved,
            cluster=self.cluster,
            clock=self.clock,
            ui=self.ui,
            stdout=self.stdout,
            namespace=self.namespace,
            name=self.name,
            job_uid=self._job_uid,
            interrupted=self.interrupt.first,
            stop_background=self._stop_background,
            messages=self._queue,
            watcher=self._watcher,
            pod=self._pod,
            events=self._events,
            job_finished=self._job_finished,
            reconnect_policy=self.reconnect_policy,
            event_poll_first=self.event_poll_first,
            event_poll_every=self.event_poll_every,
            pump_stall_seconds=self.pump_stall_seconds,
            log_end_grace=self.log_end_grace,
        )

    def _job_retries(self, outcome: RunOutcome) -> bool:
        """Whether the Job makes (or made) another pod after this one: it failed, retries remain,
        and the Job is not decided yet (the controller may not have counted this pod yet)."""
        if self.kind is not ResourceKind.JOB or outcome.interrupted or outcome.error is not None:
            return False
        if outcome.code == 0 or self._attempt >= attempts_allowed(self.resolved):
            return False
        return not self._job_finished()

    def _job_finished(self) -> bool:
        return job_finished(
            self.cluster,
            self.ui,
            name=self.name,
            namespace=self.namespace,
            pods_followed=len(self._pod.seen),
        )

    def _next_attempt(self, *, previous: RunOutcome) -> PodAttempt:
        """Retire the failed pod's attempt, so the Job's next pod is found and followed."""
        self._watcher.next_generation()
        if self._current is not None:
            self._current.retire()
        self._pod.forget()
        attempt = PodAttempt(self._follow_context(), previous=previous)
        self._current = attempt
        return attempt

    def _stop_pump(self) -> None:
        if self._current is not None:
            self._current.stop_pump()

    # -- interrupts -----------------------------------------------------------------------------

    def _first_interrupt(self) -> None:
        if not self.resolved.output.quiet:
            raw_stderr_line(
                self.ui.prefix,
                "interrupted; cleaning up (press Ctrl-C again to leave it running)",
            )
        self._stop_pump()
        self._queue.put((Msg.INTERRUPT, None))

    def _repeated_interrupt(self, signum: int) -> None:
        if not self.resolved.output.quiet:
            what = "SIGTERM" if signum == signal.SIGTERM else "the same interrupt again"
            raw_stderr_line(self.ui.prefix, f"{what}: still cleaning up")

    def _second_interrupt(self) -> None:
        raw_stderr_line(self.ui.prefix, self._abandon_messages()[0])

    def _abandon_messages(self) -> tuple[str, str]:
        return abandon_messages(
            kind=self._kind_word(),
            name=self.name,
            namespace=self.namespace,
            removal=self._removal.state,
        )

    def _report_code_on_interrupt(self) -> None:
        latest = self._current.latest if self._current is not None else None
        if latest is not None and terminated_state(latest, self.container) is not None:
            outcome = exit_outcome(latest, self.container)
            self.ui.detail(f"the container had already exited with code {outcome.code}")

    # -- cleanup and sweep ----------------------------------------------------------------------

    def _cleanup(self) -> None:
        delete_or_keep(
            self.cluster,
            self.ui,
            self.resolved,
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
            pod_name=self._pod.name,
            progress=self._removal,
        )
        if self._heartbeat is not None and self._removal.state in (Removal.KEPT, Removal.FAILED):
            # Still there, and read no more: `squarepeg clean --include-kept` may take it now.
            self._heartbeat.release()

    def _sweep(self) -> None:
        sweep_if_enabled(self.cluster, self.clock, self.ui, self.resolved, namespace=self.namespace)

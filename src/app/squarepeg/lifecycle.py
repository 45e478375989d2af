"""The `squarepeg run` use case: create, wait for start, stream, exit code, clean up, sweep.

It drives the Cluster and Clock ports only. The main thread never blocks on I/O while waiting: a
watch thread feeds pod states into a queue, a LogPump thread copies the log to stdout, and the main
thread reacts to queue messages, so Ctrl-C is handled at once and a second Ctrl-C leaves at once.
In Job mode a failed pod the Job retries (backoffLimit) is followed by its next pod, in turn.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
from typing import Any, BinaryIO

import attrs

from pegboard.domain.errors import Interrupted, PortError, RunnerError, Transient
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, JsonObject, ResourceKind, WatchEvent
from pegboard.domain.squarepeg.create_errors import create_failure_message
from pegboard.domain.squarepeg.exit_codes import (
    RUNNER_FAILED,
    ExitOutcome,
    exit_outcome,
    terminated_state,
)
from pegboard.domain.squarepeg.fail_fast import (
    TERMINAL_PHASES,
    EventNotice,
    Startup,
    events_to_surface,
    looks_blocked,
    startup_state,
    stuck_container,
)
from pegboard.domain.squarepeg.log_reconnect import ReconnectPolicy
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

from .interrupts import Abandoned, TwoStageInterrupt
from .log_pump import LogPump
from .status import StatusUI, raw_stderr_line
from .sweep import sweep_after_run

logger = logging.getLogger(__name__)

LONG_WATCH_SECONDS = 3600.0  # after startup: one long watch, renewed when it ends
EVENT_POLL_FIRST = 2.0  # a run that starts quickly never asks for events
EVENT_POLL_EVERY = 3.0
PUMP_STALL_SECONDS = 30.0  # after the container ended: no log bytes for this long -> stop
WATCH_RETRIES = 3
JOB_NAME_LABEL = "job-name"


class _Msg(enum.Enum):
    POD = "pod"
    WATCH_END = "watch-end"
    WATCH_ERROR = "watch-error"
    PUMP_DONE = "pump-done"
    INTERRUPT = "interrupt"


@attrs.frozen
class _Outcome:
    code: int
    error: str | None = None  # a runner failure: exit 125 with this message
    interrupted: bool = False
    note: str | None = None
    unreachable: bool = False  # the cluster could not be reached: a sweep would only fail too


def short_run_id(run_id: str) -> str:
    """The stderr tag: the first 8 hex digits of the run id."""
    compact = run_id.replace("-", "")
    return compact[:8] or "run"


def run(resolved: ResolvedRun, *, container: Any, dry_run_server: bool) -> int:
    """Entry point for `squarepeg run` (real runs and --dry-run-server); raises PegboardError."""
    ui = StatusUI(
        tag=short_run_id(resolved.run_id),
        stream=container.stderr(),
        quiet=resolved.output.quiet,
        color=resolved.output.color,
        environ=container.environ(),
    )
    cluster = container.cluster(context=resolved.context, lenient_tls=resolved.lenient_tls)
    if dry_run_server:
        from .dry_run_server import server_dry_run

        return server_dry_run(
            resolved,
            cluster=cluster,
            ui=ui,
            stdout=container.stdout(),
            dump_yaml=container.dump_yaml(),
        )
    stdout = container.stdout()
    sink = getattr(stdout, "buffer", stdout)  # raw bytes: never re-encoded
    return RunLifecycle(
        resolved, cluster=cluster, clock=container.clock(), ui=ui, stdout=sink
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
        stdout: BinaryIO,
        reconnect_policy: ReconnectPolicy | None = None,
        event_poll_first: float = EVENT_POLL_FIRST,
        event_poll_every: float = EVENT_POLL_EVERY,
        pump_stall_seconds: float = PUMP_STALL_SECONDS,
        log_end_grace: float | None = None,
    ) -> None:
        self.resolved = resolved
        self.cluster = cluster
        self.clock = clock
        self.ui = ui
        self.stdout = stdout
        self.reconnect_policy = reconnect_policy
        self.event_poll_first = event_poll_first
        self.event_poll_every = event_poll_every
        self.pump_stall_seconds = pump_stall_seconds
        self.log_end_grace = log_end_grace
        self.namespace = resolved.namespace or "default"
        self.kind = resolved.kind
        self.name = resolved.name
        self.container = resolved.container_name
        self.created = False
        self.interrupt = TwoStageInterrupt(
            on_first=self._first_interrupt, on_second=self._second_interrupt
        )
        self._queue: queue.Queue[tuple[_Msg, Any]] = queue.Queue()
        self._pump: LogPump | None = None
        self._container_done = threading.Event()
        self._stop_background = threading.Event()
        self._events_lock = threading.Lock()
        self._shown: set[tuple[str, str]] = set()
        self._last_warning: EventNotice | None = None
        self._job_uid: str | None = None
        self._pod_name: str | None = resolved.name if resolved.kind is ResourceKind.POD else None
        self._pod_uid: str | None = None
        self._latest: JsonObject | None = None
        self._started = False
        # Job mode follows each retry: the pods already followed, the attempt (1-based) and a
        # generation that silences the watches of earlier attempts.
        self._seen_pods: set[str] = set()
        self._attempt = 1
        self._watch_gen = 0
        self._previous: _Outcome | None = None  # the failed pod's outcome while awaiting a retry

    # -- the run --------------------------------------------------------------------------------

    def execute(self) -> int:
        """Run to completion; the container's code, or RunnerError (125) / Interrupted (130)."""
        target = self.cluster.target()
        self.namespace = self.resolved.namespace or target.namespace or "default"
        self.ui.banner(target.context, self.namespace)
        try:
            with self.interrupt.installed():
                outcome = self._run()
                self.interrupt.abandon_allowed = False
        except Abandoned:
            raise Interrupted(
                f"interrupted; {self._kind_word()} {self.name} left running"
            ) from None
        finally:
            self._stop_background.set()
        if outcome.interrupted or self.interrupt.first.is_set():
            raise Interrupted("interrupted")
        if outcome.error is not None:
            raise RunnerError(outcome.error)
        if outcome.note:
            self.ui.error(outcome.note)
        return outcome.code

    def _run(self) -> _Outcome:
        failure = self._create()
        if failure is not None:
            if not failure.unreachable:
                self._sweep()
            return failure
        outcome = self._follow()
        self._stop_background.set()
        if self._pump is not None:
            self._pump.stop()
        if outcome.interrupted:
            self._report_code_on_interrupt()
        self._cleanup()
        self._sweep()
        return outcome

    def _kind_word(self) -> str:
        return self.kind.value.lower()

    # -- create ---------------------------------------------------------------------------------

    def _create(self) -> _Outcome | None:
        self.ui.step(f"creating {self._kind_word()} {self.name!r} in namespace {self.namespace!r}")
        try:
            created = self.cluster.create(self.resolved.manifest, namespace=self.namespace)
        except PortError as exc:
            # Nothing of ours exists: a 409 means someone else's resource, never ours to delete.
            message = create_failure_message(
                exc, kind=self.kind, name=self.name, namespace=self.namespace
            )
            return _Outcome(
                RUNNER_FAILED,
                error=message,
                note="transport" if isinstance(exc, Transient) else None,
            )
        self.created = True
        meta = created.get("metadata") or {}
        self.name = str(meta.get("name") or self.name)
        if self.kind is ResourceKind.JOB:
            self._job_uid = meta.get("uid")
        else:
            self._pod_name = self.name
            self._pod_uid = meta.get("uid")
        return None  # an interrupt during create is noticed at once by _await

    # -- following the Job's retries ----------------------------------------------------------

    def _follow(self) -> _Outcome:
        """Follow the pod; in Job mode, each retry pod too. The exit code is the last pod's."""
        outcome = self._await()
        while self._job_retries(outcome):
            failed = self._pod_name
            self._attempt += 1
            self.ui.step(
                f"pod {failed} failed (exit {outcome.code}); the Job retries: "
                f"attempt {self._attempt} of {self._attempts_allowed()}"
            )
            if outcome.note:
                self.ui.detail(outcome.note)
            self._previous = outcome
            self._forget_pod()
            outcome = self._await()
        return outcome

    def _attempts_allowed(self) -> int:
        spec = self.resolved.manifest.get("spec") or {}
        try:
            return int(spec.get("backoffLimit", 0)) + 1
        except (TypeError, ValueError):
            return 1  # the apiserver would have refused it; never retry on a guess

    def _job_retries(self, outcome: _Outcome) -> bool:
        """Whether the Job makes (or made) another pod after this one: it failed, retries remain,
        and the Job is not decided yet (the controller may not have counted this pod yet)."""
        if self.kind is not ResourceKind.JOB or outcome.interrupted or outcome.error is not None:
            return False
        if outcome.code == 0 or self._attempt >= self._attempts_allowed():
            return False
        return not self._job_finished()

    def _job_finished(self) -> bool:
        """The Job is gone, or Complete/Failed with no pod we have not followed yet (a retry pod
        may finish before we look; a read failure ends the run as before retries were followed)."""
        try:
            job = self.cluster.read(ResourceKind.JOB, self.name, namespace=self.namespace)
        except PortError as exc:
            self.ui.warn(f"could not read job {self.name}: {exc}")
            return True
        if job is None:
            return True
        status = job.get("status") or {}
        decided = any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        counted = int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
        return decided and counted <= len(self._seen_pods)

    def _forget_pod(self) -> None:
        """Drop the finished pod's state so the next pod of the Job is found and followed."""
        self._watch_gen += 1
        if self._pump is not None:
            self._pump.stop()
        self._pump = None
        self._container_done = threading.Event()
        self._pod_name = None
        self._pod_uid = None
        self._latest = None
        self._started = False

    def _stale(self, msg: _Msg, payload: Any) -> bool:
        """A watch message from an earlier attempt's watch."""
        if msg is _Msg.WATCH_END:
            return bool(payload != self._watch_gen)
        if msg is _Msg.WATCH_ERROR:
            return bool(payload[0] != self._watch_gen)
        return False

    # -- waiting --------------------------------------------------------------------------------

    def _await(self) -> _Outcome:
        timeout = float(self.resolved.startup_timeout_seconds)
        deadline = self.clock.monotonic() + timeout
        self._watch(timeout)
        threading.Thread(
            target=self._poll_events, args=(self._attempt,), name="squarepeg-events", daemon=True
        ).start()
        what = "pod" if self.kind is ResourceKind.POD else "job's pod"
        watch_failures = 0
        with self.ui.waiting(f"waiting for the {what} to start"):
            while not self._started:
                if self.interrupt.first.is_set():
                    return _Outcome(130, interrupted=True)
                msg, payload = self._queue.get()
                if msg is _Msg.INTERRUPT:
                    return _Outcome(130, interrupted=True)
                if self._stale(msg, payload):
                    continue
                if msg is _Msg.WATCH_END:
                    previous = self._previous
                    if previous is not None and self._pod_name is None and self._job_finished():
                        return previous  # the Job ended without another pod
                    remaining = deadline - self.clock.monotonic()
                    if remaining <= 0:
                        return self._startup_timeout(timeout)
                    self._watch(remaining)
                    continue
                if msg is _Msg.WATCH_ERROR:
                    watch_failures += 1
                    if watch_failures > WATCH_RETRIES:
                        return _Outcome(
                            RUNNER_FAILED, error=f"lost the watch on the pod: {payload[1]}"
                        )
                    self._queue_after(0.5 * watch_failures, (_Msg.WATCH_END, self._watch_gen))
                    continue
                if msg is not _Msg.POD:
                    continue
                watch_failures = 0
                decided = self._on_startup_event(payload)
                if decided is not None:
                    return decided
        return self._await_termination()

    def _on_startup_event(self, event: WatchEvent) -> _Outcome | None:
        pod = event.object
        if not self._is_our_pod(pod):
            return None
        if event.type == "DELETED":
            return self._gone_before_end(pod)
        self._latest = pod
        state = startup_state(pod, self.container)
        if state is Startup.FAILED:
            stuck = stuck_container(pod)
            self._surface_events(all_types=True)
            return _Outcome(RUNNER_FAILED, error=stuck.describe() if stuck else "failed to start")
        if state is Startup.WAITING:
            if looks_blocked(pod):
                self._surface_events()
            return None
        self._started = True
        own = (pod.get("status") or {}).get("containerStatuses") or []
        ran = any(
            s.get("name") == self.container
            and ({"running", "terminated"} & set(s.get("state") or {}))
            for s in own
        )
        if ran:
            self.ui.step(f"pod {self._pod_name} started; streaming its output")
            self._start_pump()
        if self._ended(pod):
            self._container_done.set()
        return None

    def _await_termination(self) -> _Outcome:
        watch_failures = 0
        while True:
            if self.interrupt.first.is_set():
                return _Outcome(130, interrupted=True)
            latest = self._latest
            if latest is not None and self._ended(latest):
                self._container_done.set()
                return self._finish(exit_outcome(latest, self.container))
            msg, payload = self._queue.get()
            if msg is _Msg.INTERRUPT:
                return _Outcome(130, interrupted=True)
            if self._stale(msg, payload):
                continue
            if msg is _Msg.WATCH_END:
                self._watch(LONG_WATCH_SECONDS)
            elif msg is _Msg.WATCH_ERROR:
                watch_failures += 1
                if watch_failures > WATCH_RETRIES:
                    return _Outcome(RUNNER_FAILED, error=f"lost the watch on the pod: {payload[1]}")
                self._queue_after(0.5 * watch_failures, (_Msg.WATCH_END, self._watch_gen))
            elif msg is _Msg.POD:
                watch_failures = 0
                event: WatchEvent = payload
                if not self._is_our_pod(event.object):
                    continue
                if event.type == "DELETED" and not self._ended(event.object):
                    return self._gone_before_end(event.object)
                self._latest = event.object

    def _finish(self, outcome: ExitOutcome) -> _Outcome:
        """The container ended: let the log pump drain, then report its code."""
        pump = self._pump
        if pump is not None:
            last_progress = -1
            while not pump.finished.is_set():
                if self.interrupt.first.is_set():
                    return _Outcome(130, interrupted=True)
                try:
                    msg, _ = self._queue.get(timeout=self.pump_stall_seconds)
                except queue.Empty:
                    if pump.bytes_received == last_progress:
                        self.ui.warn(
                            "the log stream stalled after the container ended; stopping it"
                        )
                        pump.stop()
                        pump.join(1.0)
                        break
                    last_progress = pump.bytes_received
                    continue
                if msg is _Msg.INTERRUPT:
                    return _Outcome(130, interrupted=True)
        if not outcome.terminated:
            return _Outcome(RUNNER_FAILED, error=outcome.note or "the container never terminated")
        return _Outcome(outcome.code, note=outcome.note)

    def _ended(self, pod: JsonObject) -> bool:
        phase = (pod.get("status") or {}).get("phase")
        return phase in TERMINAL_PHASES or terminated_state(pod, self.container) is not None

    def _gone_before_end(self, pod: JsonObject) -> _Outcome:
        self._container_done.set()
        if self._pump is not None:
            self._pump.stop()
        if terminated_state(pod, self.container) is not None:
            return self._finish(exit_outcome(pod, self.container))
        return _Outcome(
            RUNNER_FAILED,
            error=f"pod {self._pod_name} was deleted before its container terminated",
        )

    def _startup_timeout(self, timeout: float) -> _Outcome:
        self._surface_events(all_types=True)
        if self._pod_name is None:
            text = f"timed out after {timeout:g}s waiting for job {self.name} to create its pod"
        else:
            text = f"timed out after {timeout:g}s waiting for pod {self._pod_name} to start"
        warning = self._last_warning
        if warning is not None:
            text += f"; last warning: {warning.reason}: {warning.message}"
        return _Outcome(RUNNER_FAILED, error=text)

    def _is_our_pod(self, pod: JsonObject) -> bool:
        meta = pod.get("metadata") or {}
        if self._pod_name is None:
            # Job mode: the first pod of our Job not followed before is the one we follow.
            if meta.get("name") in self._seen_pods:
                return False
            self._pod_name = str(meta.get("name"))
            self._seen_pods.add(self._pod_name)
            self._pod_uid = meta.get("uid")
            self.ui.step(f"job {self.name} created pod {self._pod_name}")
            return True
        if meta.get("name") != self._pod_name:
            return False
        if self._pod_uid is None:
            self._pod_uid = meta.get("uid")
        return self._pod_uid is None or meta.get("uid") in (None, self._pod_uid)

    # -- background threads ---------------------------------------------------------------------

    def _watch(self, timeout: float) -> None:
        if self.kind is ResourceKind.POD:
            selectors: dict[str, str] = {"field_selector": f"metadata.name={self.name}"}
        else:
            selectors = {"label_selector": f"{JOB_NAME_LABEL}={self.name}"}
        gen = self._watch_gen

        def watch() -> None:
            try:
                for event in self.cluster.watch(
                    ResourceKind.POD, namespace=self.namespace, timeout=timeout, **selectors
                ):
                    if self._stop_background.is_set() or gen != self._watch_gen:
                        return
                    self._queue.put((_Msg.POD, event))
            except PortError as exc:
                self._queue.put((_Msg.WATCH_ERROR, (gen, exc)))
                return
            except Exception as exc:  # a broken connection in the client library
                logger.debug("watch failed", exc_info=True)
                self._queue.put((_Msg.WATCH_ERROR, (gen, exc)))
                return
            self._queue.put((_Msg.WATCH_END, gen))

        threading.Thread(target=watch, name="squarepeg-watch", daemon=True).start()

    def _queue_after(self, delay: float, message: tuple[_Msg, Any]) -> None:
        timer = threading.Timer(delay, self._queue.put, args=(message,))
        timer.daemon = True
        timer.start()

    def _start_pump(self) -> None:
        assert self._pod_name is not None
        pump = LogPump(
            cluster=self.cluster,
            clock=self.clock,
            pod=self._pod_name,
            namespace=self.namespace,
            container=self.container,
            sink=self.stdout,
            notices=self.ui,
            container_done=self._container_done,
            policy=self.reconnect_policy,
            **({} if self.log_end_grace is None else {"end_grace": self.log_end_grace}),
        )
        pump.on_finished.append(lambda: self._queue.put((_Msg.PUMP_DONE, None)))
        self._pump = pump
        if self.interrupt.first.is_set():
            return
        pump.start()

    def _poll_events(self, attempt: int) -> None:
        """While startup lasts, ask now and then what blocks it (never for a quick start)."""
        if self.ui.quiet:
            return
        wait = self.event_poll_first
        while not self._stop_background.wait(wait):
            if self._started or attempt != self._attempt:
                return
            self._surface_events()
            wait = self.event_poll_every

    def _surface_events(self, *, all_types: bool = False) -> None:
        """Show Warning events (or, on failure, any event) about our Job and pod once each."""
        targets = []
        if self.kind is ResourceKind.JOB:
            targets.append((self.name, self._job_uid))
        if self._pod_name is not None:
            targets.append((self._pod_name, self._pod_uid))
        with self._events_lock:
            for name, uid in targets:
                try:
                    events = self.cluster.list_events(
                        namespace=self.namespace, involved_name=name, involved_uid=uid
                    )
                except (PortError, OSError) as exc:
                    logger.debug("listing events failed: %s", exc)
                    continue
                notices = events_to_surface(
                    events,
                    involved_name=name,
                    involved_uid=uid,
                    already_shown=frozenset(self._shown),
                    warnings_only=not all_types,
                )
                for notice in notices:
                    self._shown.add(notice.key)
                    if notice.type == "Warning":
                        first = self._last_warning is None
                        self._last_warning = notice
                        self.ui.warn(f"{notice.reason}: {notice.message}")
                        if first and not all_types:
                            self.ui.detail(
                                "still waiting, up to --timeout "
                                f"({self.resolved.startup_timeout_seconds}s)"
                            )
                    else:
                        self.ui.detail(f"{notice.reason}: {notice.message}")

    # -- interrupts -----------------------------------------------------------------------------

    def _first_interrupt(self) -> None:
        if not self.resolved.output.quiet:
            raw_stderr_line(
                self.ui.prefix,
                "interrupted; cleaning up (press Ctrl-C again to leave it running)",
            )
        if self._pump is not None:
            self._pump.stop()
        self._queue.put((_Msg.INTERRUPT, None))

    def _second_interrupt(self) -> None:
        kind = self._kind_word()
        raw_stderr_line(
            self.ui.prefix,
            f"leaving {kind} {self.name} running in namespace {self.namespace}; "
            f"delete it with: kubectl delete {kind} {self.name} -n {self.namespace}",
        )

    def _report_code_on_interrupt(self) -> None:
        latest = self._latest
        if latest is not None and terminated_state(latest, self.container) is not None:
            outcome = exit_outcome(latest, self.container)
            self.ui.detail(f"the container had already exited with code {outcome.code}")

    # -- cleanup and sweep ----------------------------------------------------------------------

    def _cleanup(self) -> None:
        kind = self._kind_word()
        if self.resolved.keep:
            pod = self._pod_name or f"job/{self.name}"
            self.ui.step(f"kept {kind} {self.name}; inspect it with:")
            self.ui.detail(f"kubectl describe {kind} {self.name} -n {self.namespace}")
            self.ui.detail(f"kubectl logs {pod} -n {self.namespace} -c {self.container}")
            return
        try:
            deleted = self.cluster.delete(
                self.kind, self.name, namespace=self.namespace, propagation="Background"
            )
        except PortError as exc:
            # The container's code stands; say how to finish the job by hand.
            self.ui.warn(
                f"could not delete {kind} {self.name}: {exc}; "
                f"delete it with 'kubectl delete {kind} {self.name} -n {self.namespace}'"
            )
            return
        self.ui.detail(
            f"deleted {kind} {self.name}" if deleted else f"{kind} {self.name} was already gone"
        )

    def _sweep(self) -> None:
        if not self.resolved.sweep.enabled:
            return
        sweep_after_run(
            self.cluster,
            self.clock,
            self.ui,
            namespace=self.namespace,
            created_by=self.resolved.created_by,
            min_age_seconds=self.resolved.sweep.min_age_seconds,
            exclude_run_id=self.resolved.run_id,
        )

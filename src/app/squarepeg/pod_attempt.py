"""Following one pod from start to end: wait for it to start (failing fast, surfacing events),
stream its log in a LogPump thread, wait for its container to end, and read its exit code.

The main thread only waits on the message queue (pod events, watch ends and errors, the pump
finishing, an interrupt), so a first Ctrl-C ends the wait at once. In Job mode each retry pod is
followed by a new PodAttempt; the earlier one is retired and its messages become stale.
"""

from __future__ import annotations

import errno
import queue
import threading
from collections.abc import Callable
from typing import BinaryIO

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes.pod_start import (
    TERMINAL_PHASES,
    EventNotice,
    Startup,
    looks_blocked,
    startup_state,
    stuck_container,
)
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, JsonObject, ResourceKind, WatchEvent
from pegboard.domain.retry import Backoff, RetryBudget
from pegboard.domain.squarepeg.create_errors import refusal_hint
from pegboard.domain.squarepeg.exit_codes import (
    INTERRUPTED,
    OUTPUT_INCOMPLETE,
    RUNNER_FAILED,
    STDOUT_CLOSED,
)
from pegboard.domain.squarepeg.exit_policy import ExitOutcome, exit_outcome, terminated_state
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

from .job_pods import FollowedPod
from .log_pump import LogPump
from .pod_watch import LONG_WATCH_SECONDS, WATCH_BACKOFF, Message, Msg, PodWatcher, pod_selectors
from .run_outcome import OutputLoss, RunOutcome
from .startup_events import EventSurfacer, Involved
from .status import StatusUI

PUMP_STALL_SECONDS = 30.0  # after the container ended: no log bytes for this long -> stop


@attrs.frozen
class FollowContext:
    """What following a pod needs from the run; fixed once the Pod or Job exists."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    resolved: ResolvedRun
    cluster: Cluster
    clock: Clock
    ui: StatusUI
    stdout: BinaryIO | None  # None when the process has no stdout (`>&-`)
    namespace: str
    name: str  # the Pod or Job created
    job_uid: str | None
    interrupted: threading.Event  # set by the first Ctrl-C
    stop_background: threading.Event
    messages: queue.Queue[Message]
    watcher: PodWatcher
    pod: FollowedPod
    events: EventSurfacer
    job_finished: Callable[[], bool]
    reconnect_policy: Backoff | None
    event_poll_first: float
    event_poll_every: float
    pump_stall_seconds: float
    log_end_grace: float | None


class PodAttempt:
    """One pod followed to its end; `follow()` returns its outcome."""

    def __init__(self, ctx: FollowContext, *, previous: RunOutcome | None = None) -> None:
        self.ctx = ctx
        self.previous = previous  # the failed pod's outcome while awaiting a Job's retry
        self.container = ctx.resolved.container_name
        self.pump: LogPump | None = None
        self.container_done = threading.Event()
        self.latest: JsonObject | None = None
        self.started = False
        self.running_since: float | None = None  # when its container was first seen running
        self.retired = False
        self.pump_stopped: str | None = None  # why the pump was stopped before its end

    def stop_pump(self) -> None:
        if self.pump is not None:
            self.pump.stop()

    def retire(self) -> None:
        """A Job's next pod is followed now: stop this one's log and event polling."""
        self.retired = True
        self.stop_pump()

    # -- waiting for the start ------------------------------------------------------------------

    def follow(self) -> RunOutcome:
        ctx = self.ctx
        timeout = float(ctx.resolved.startup_timeout_seconds)
        deadline = ctx.clock.monotonic() + timeout
        self._watch(timeout)
        self._poll_events()
        what = "pod" if ctx.resolved.kind is ResourceKind.POD else "job's pod"
        if ctx.resolved.kind is ResourceKind.JOB:
            ctx.events.on_refused = lambda notice: ctx.messages.put((Msg.CREATE_REFUSED, notice))
        watch_budget = RetryBudget(WATCH_BACKOFF)  # one outage of the watch at a time
        with ctx.ui.waiting(f"waiting for the {what} to start"):
            while not self.started:
                if ctx.interrupted.is_set():
                    return RunOutcome(INTERRUPTED, interrupted=True)
                msg, payload = ctx.messages.get()
                if msg is Msg.INTERRUPT:
                    return RunOutcome(INTERRUPTED, interrupted=True)
                if msg is Msg.CREATE_REFUSED:
                    if ctx.pod.name is None:
                        return self._create_refused(payload)
                    continue
                if ctx.watcher.is_stale(msg, payload):
                    continue
                if msg is Msg.WATCH_END:
                    previous = self.previous
                    if previous is not None and ctx.pod.name is None and ctx.job_finished():
                        return previous  # the Job ended without another pod
                    remaining = deadline - ctx.clock.monotonic()
                    if remaining <= 0:
                        return self._startup_timeout(timeout)
                    self._watch(remaining)
                    continue
                if msg is Msg.WATCH_ERROR:
                    lost = self._renew_watch(watch_budget, payload[1])
                    if lost is not None:
                        return lost
                    continue
                if msg is not Msg.POD:
                    continue
                watch_budget.recovered()
                decided = self._on_startup_event(payload)
                if decided is not None:
                    return decided
        return self._await_termination()

    def _on_startup_event(self, event: WatchEvent) -> RunOutcome | None:
        pod = event.object
        if not self.ctx.pod.owns(pod):
            return None
        if event.type == "DELETED":
            return self._gone_before_end(pod)
        self.latest = pod
        state = startup_state(pod, self.container)
        if state is Startup.FAILED:
            stuck = stuck_container(pod)
            self._surface_events(all_types=True)
            return RunOutcome(RUNNER_FAILED, error=stuck.describe() if stuck else "failed to start")
        if state is Startup.WAITING:
            if looks_blocked(pod):
                self._surface_events()
            return None
        self.started = True
        own = (pod.get("status") or {}).get("containerStatuses") or []
        ran = any(
            s.get("name") == self.container
            and ({"running", "terminated"} & set(s.get("state") or {}))
            for s in own
        )
        if ran:
            self.running_since = self.ctx.clock.monotonic()
            self.ctx.ui.step(f"pod {self.ctx.pod.name} started; streaming its output")
            self._start_pump()
        if self._ended(pod):
            self.container_done.set()
        return None

    def _create_refused(self, notice: EventNotice) -> RunOutcome:
        """The Job exists but the apiserver refuses its pod: say why and how to fix it now,
        rather than at --timeout (the controller would only retry the same pod)."""
        reason = notice.message.removeprefix("Error creating: ")
        text = f"job {self.ctx.name} cannot create its pod: {reason}"
        hint = refusal_hint(reason, namespace=self.ctx.namespace)
        return RunOutcome(RUNNER_FAILED, error=f"{text} ({hint})" if hint else text)

    def _startup_timeout(self, timeout: float) -> RunOutcome:
        self._surface_events(all_types=True)
        if self.ctx.pod.name is None:
            text = f"timed out after {timeout:g}s waiting for job {self.ctx.name} to create its pod"
        else:
            text = f"timed out after {timeout:g}s waiting for pod {self.ctx.pod.name} to start"
        warning = self.ctx.events.last_warning
        if warning is not None:
            text += f"; last warning: {warning.reason}: {warning.message}"
        return RunOutcome(RUNNER_FAILED, error=text)

    # -- waiting for the end --------------------------------------------------------------------

    def _await_termination(self) -> RunOutcome:
        ctx = self.ctx
        watch_budget = RetryBudget(WATCH_BACKOFF)  # one outage of the watch at a time
        while True:
            if ctx.interrupted.is_set():
                return RunOutcome(INTERRUPTED, interrupted=True)
            latest = self.latest
            if latest is not None and self._ended(latest):
                self.container_done.set()
                return self._finish(exit_outcome(latest, self.container))
            msg, payload = ctx.messages.get()
            if msg is Msg.INTERRUPT:
                return RunOutcome(INTERRUPTED, interrupted=True)
            if ctx.watcher.is_stale(msg, payload):
                continue
            if msg is Msg.WATCH_END:
                self._watch(LONG_WATCH_SECONDS)
            elif msg is Msg.WATCH_ERROR:
                lost = self._renew_watch(watch_budget, payload[1])
                if lost is not None:
                    return lost
            elif msg is Msg.POD:
                watch_budget.recovered()
                event: WatchEvent = payload
                if not ctx.pod.owns(event.object):
                    continue
                if event.type == "DELETED" and not self._ended(event.object):
                    return self._gone_before_end(event.object)
                self.latest = event.object

    def _renew_watch(self, budget: RetryBudget, error: object) -> RunOutcome | None:
        """Renew a failed watch after WATCH_BACKOFF; the run fails once the outage's budget is
        spent (WATCH_RETRIES renewals without a single pod event in between)."""
        delay = budget.next_delay()
        if delay is None:
            return RunOutcome(RUNNER_FAILED, error=f"lost the watch on the pod: {error}")
        self.ctx.watcher.renew_after(delay)
        return None

    def _finish(self, outcome: ExitOutcome) -> RunOutcome:
        """The container ended: let the log pump drain, then report its code."""
        pump = self.pump
        if pump is not None:
            last_progress = -1
            while not pump.finished.is_set():
                if self.ctx.interrupted.is_set():
                    return RunOutcome(INTERRUPTED, interrupted=True)
                try:
                    msg, _ = self.ctx.messages.get(timeout=self.ctx.pump_stall_seconds)
                except queue.Empty:
                    if pump.bytes_received == last_progress:
                        self.ctx.ui.warn(
                            "the log stream stalled after the container ended; stopping it"
                        )
                        self.pump_stopped = "the log stream stalled after the container ended"
                        pump.stop()
                        pump.join(1.0)
                        break
                    last_progress = pump.bytes_received
                    continue
                if msg is Msg.INTERRUPT:
                    return RunOutcome(INTERRUPTED, interrupted=True)
        if not outcome.terminated:
            return RunOutcome(RUNNER_FAILED, error=outcome.note or "the container never terminated")
        return RunOutcome(outcome.code, note=outcome.note, lost=self._output_loss(outcome.code))

    def _output_loss(self, code: int) -> OutputLoss | None:
        """None when every byte of the log reached stdout exactly once; else what to say."""
        pump = self.pump
        if pump is None or pump.complete:
            return None
        exited = f"the container exited with code {code}"
        error = pump.stdout_error
        if error is not None and _closed_pipe(error):
            return OutputLoss(
                STDOUT_CLOSED,
                f"stdout was closed (broken pipe); the rest of the output was discarded; "
                f"{exited}; exiting {STDOUT_CLOSED}",
                quiet_ok=True,
            )
        reason = pump.lost or self.pump_stopped or "the end of the log was never confirmed"
        return OutputLoss(
            OUTPUT_INCOMPLETE,
            f"output incomplete: {reason}; {exited}; exiting {OUTPUT_INCOMPLETE}",
        )

    def _ended(self, pod: JsonObject) -> bool:
        phase = (pod.get("status") or {}).get("phase")
        return phase in TERMINAL_PHASES or terminated_state(pod, self.container) is not None

    def _gone_before_end(self, pod: JsonObject) -> RunOutcome:
        self.container_done.set()
        if self.pump is not None and not self.pump.finished.is_set():
            self.pump_stopped = f"pod {self.ctx.pod.name} was deleted before its log was read"
        self.stop_pump()
        if terminated_state(pod, self.container) is not None:
            return self._finish(exit_outcome(pod, self.container))
        return RunOutcome(
            RUNNER_FAILED,
            error=f"pod {self.ctx.pod.name} was deleted before its container terminated",
        )

    # -- background threads ---------------------------------------------------------------------

    def _watch(self, timeout: float) -> None:
        ctx = self.ctx
        ctx.watcher.watch(
            timeout,
            namespace=ctx.namespace,
            selectors=pod_selectors(ctx.resolved.kind, ctx.name),
        )

    def _start_pump(self) -> None:
        ctx = self.ctx
        assert ctx.pod.name is not None
        pump = LogPump(
            cluster=ctx.cluster,
            clock=ctx.clock,
            pod=ctx.pod.name,
            namespace=ctx.namespace,
            container=self.container,
            sink=ctx.stdout,
            notices=ctx.ui,
            container_done=self.container_done,
            policy=ctx.reconnect_policy,
            **({} if ctx.log_end_grace is None else {"end_grace": ctx.log_end_grace}),
        )
        pump.on_finished.append(lambda: ctx.messages.put((Msg.PUMP_DONE, None)))
        self.pump = pump
        if ctx.interrupted.is_set():
            return
        pump.start()

    def _poll_events(self) -> None:
        """Follow the startup's events with a watch (startup_events), for as long as it lasts.
        --quiet shows none of them, but a Job's are still read: a refused pod ends the run."""
        if self.ctx.ui.quiet and self.ctx.resolved.kind is not ResourceKind.JOB:
            return
        self.ctx.events.follow(
            self._event_targets,
            namespace=self.ctx.namespace,
            still_starting=lambda: not self.started and not self.retired,
            stop=self.ctx.stop_background,
            first=self.ctx.event_poll_first,
            check_every=self.ctx.event_poll_every,
        )

    def _event_targets(self) -> list[Involved]:
        ctx = self.ctx
        targets: list[Involved] = []
        if ctx.resolved.kind is ResourceKind.JOB:
            targets.append((ctx.name, ctx.job_uid))
        if ctx.pod.name is not None:
            targets.append((ctx.pod.name, ctx.pod.uid))
        return targets

    def _surface_events(self, *, all_types: bool = False) -> None:
        """Show Warning events (or, on failure, any event) about our Job and pod once each."""
        ctx = self.ctx
        ctx.events.surface(self._event_targets(), namespace=ctx.namespace, all_types=all_types)


def _closed_pipe(error: BaseException) -> bool:
    return isinstance(error, BrokenPipeError) or getattr(error, "errno", None) == errno.EPIPE

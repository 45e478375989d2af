"""PodScript: what FakeCluster's kubelet does with a pod, step by step, in virtual time.

Every step has `at`: seconds after the pod was created (for a Job's pod: after the Jobs controller
created it). Steps at the same time fire in script order. `container=None` means every app
container. Build scripts with the fluent methods, e.g.

    PodScript().running(at=1).log(b"hello\\n", at=1.5).exit(3, at=2)
    PodScript.completes(b"progress 50%\\rprogress 100%\\n", exit_code=0)
    PodScript().waiting("ErrImagePull", "pull access denied", at=0.5)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Union

__all__ = [
    "Call",
    "DeletePod",
    "DropLogStream",
    "EndLogStream",
    "Event",
    "Evict",
    "Exit",
    "InitWaiting",
    "Log",
    "Placed",
    "PodScript",
    "Running",
    "Step",
    "Unschedulable",
    "Waiting",
]


@dataclass(frozen=True)
class _WaitStep:
    reason: str
    message: str = ""
    at: float = 0.0
    container: str | None = None


@dataclass(frozen=True)
class Waiting(_WaitStep):
    """The container waits with a reason (ErrImagePull, CrashLoopBackOff, ContainerCreating...)."""


@dataclass(frozen=True)
class InitWaiting(_WaitStep):
    """An init container waits with a reason; the app containers wait in PodInitializing."""


@dataclass(frozen=True)
class Running:
    """The container started: state.running, pod phase Running."""

    at: float = 0.0
    container: str | None = None


@dataclass(frozen=True)
class Log:
    """The container writes `data`. Like containerd, complete lines become log records and a
    trailing partial line waits for its newline or the container's exit; `partial=True` writes it
    at once as its own record (what containerd does past 16 KiB without a newline).

    `timestamp` (RFC3339Nano) overrides the virtual time stamped on every record of this step,
    so tests can produce identical lines with identical timestamps.
    """

    data: bytes
    at: float = 0.0
    container: str | None = None
    timestamp: str | None = None
    partial: bool = False


@dataclass(frozen=True)
class Exit:
    """The container terminates; reason defaults to Completed (0) or Error (non-zero)."""

    code: int
    at: float = 0.0
    reason: str | None = None
    message: str = ""
    container: str | None = None


@dataclass(frozen=True)
class _LogStreamMark:
    at: float = 0.0
    container: str | None = None


@dataclass(frozen=True)
class DropLogStream(_LogStreamMark):
    """The next follow stream to read past this point breaks (LogStreamDropped); fires once."""


@dataclass(frozen=True)
class EndLogStream(_LogStreamMark):
    """The next follow stream to read past this point ends cleanly, container still running."""


@dataclass(frozen=True)
class Event:
    """An Event about the pod (Normal or Warning), as the scheduler or kubelet would record it."""

    reason: str
    message: str
    type: str = "Normal"
    at: float = 0.0
    component: str = "kubelet"


@dataclass(frozen=True)
class Unschedulable:
    """The scheduler cannot place the pod: PodScheduled False plus a FailedScheduling warning."""

    message: str = "0/1 nodes are available: 1 Insufficient memory."
    at: float = 0.0


@dataclass(frozen=True)
class Placed:
    """The scheduler places a pod it could not place before (a node freed or was added)."""

    at: float = 0.0


@dataclass(frozen=True)
class Evict:
    """The kubelet evicts the pod: phase Failed with a reason, containers never terminated."""

    reason: str = "Evicted"
    message: str = "The node was low on resource: memory."
    at: float = 0.0


@dataclass(frozen=True)
class DeletePod:
    """The pod is deleted underneath the caller (kubectl delete, node drain): a DELETED event."""

    at: float = 0.0


@dataclass(frozen=True)
class Call:
    """Run `fn()` at this virtual time (outside the fake's lock), e.g. to send an interrupt."""

    fn: Callable[[], object]
    at: float = 0.0


Step = Union[  # noqa: UP007 - a runtime alias, kept readable
    Waiting,
    InitWaiting,
    Running,
    Log,
    Exit,
    DropLogStream,
    EndLogStream,
    Event,
    Unschedulable,
    Placed,
    Evict,
    DeletePod,
    Call,
]


@dataclass(frozen=True)
class PodScript:
    """The kubelet's script for one pod. The empty script schedules the pod and leaves it Pending
    (ContainerCreating) forever; add steps to make things happen."""

    steps: tuple[Step, ...] = field(default=())

    def then(self, *steps: Step) -> PodScript:
        """This script with more steps appended."""
        return replace(self, steps=(*self.steps, *steps))

    def waiting(
        self, reason: str, message: str = "", *, at: float = 0.0, container: str | None = None
    ) -> PodScript:
        return self.then(Waiting(reason, message, at, container))

    def init_waiting(
        self, reason: str, message: str = "", *, at: float = 0.0, container: str | None = None
    ) -> PodScript:
        return self.then(InitWaiting(reason, message, at, container))

    def running(self, *, at: float = 0.0, container: str | None = None) -> PodScript:
        return self.then(Running(at, container))

    def log(
        self,
        data: bytes,
        *,
        at: float = 0.0,
        container: str | None = None,
        timestamp: str | None = None,
        partial: bool = False,
    ) -> PodScript:
        return self.then(Log(data, at, container, timestamp, partial))

    def exit(
        self,
        code: int,
        *,
        at: float = 0.0,
        reason: str | None = None,
        message: str = "",
        container: str | None = None,
    ) -> PodScript:
        return self.then(Exit(code, at, reason, message, container))

    def oom_killed(self, *, at: float = 0.0, container: str | None = None) -> PodScript:
        return self.then(Exit(137, at, "OOMKilled", "", container))

    def drop_log_stream(self, *, at: float = 0.0, container: str | None = None) -> PodScript:
        return self.then(DropLogStream(at, container))

    def end_log_stream(self, *, at: float = 0.0, container: str | None = None) -> PodScript:
        return self.then(EndLogStream(at, container))

    def event(
        self, reason: str, message: str, *, type: str = "Normal", at: float = 0.0
    ) -> PodScript:
        return self.then(Event(reason, message, type, at))

    def unschedulable(self, message: str = Unschedulable.message, *, at: float = 0.0) -> PodScript:
        return self.then(Unschedulable(message, at))

    def placed(self, *, at: float = 0.0) -> PodScript:
        return self.then(Placed(at))

    def evict(self, *, at: float = 0.0, message: str = Evict.message) -> PodScript:
        return self.then(Evict("Evicted", message, at))

    def delete(self, *, at: float = 0.0) -> PodScript:
        return self.then(DeletePod(at))

    def call(self, fn: Callable[[], object], *, at: float = 0.0) -> PodScript:
        return self.then(Call(fn, at))

    @classmethod
    def completes(
        cls, output: bytes = b"", *, exit_code: int = 0, start: float = 1.0, duration: float = 1.0
    ) -> PodScript:
        """Start after `start` s, write `output` at once, exit with `exit_code` `duration` s later."""
        script = cls().running(at=start)
        if output:
            script = script.log(output, at=start)
        return script.exit(exit_code, at=start + duration)

    @classmethod
    def pending(cls) -> PodScript:
        """Scheduled, then ContainerCreating forever (the empty script)."""
        return cls()

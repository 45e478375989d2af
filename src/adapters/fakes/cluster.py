"""FakeCluster: an in-memory Kubernetes that behaves like the real adapter, in virtual time.

Objects are the dicts the apiserver would return (uid, resourceVersion, creationTimestamp, status
with containerStatuses and Job conditions); errors are the same PortError subclasses with the same
statuses. A scripted kubelet (PodScript) moves pods through their life, a Jobs controller creates
each Job's pod and sets Complete/Failed, and fail_next() injects failures.

Time: everything runs on a FakeClock. With auto_advance (the default) a caller that would block
(a watch or a log follow waiting for something new) moves the clock to the next scripted step, so
tests never sleep; when nothing is scheduled a watch returns at its deadline and a log follow
blocks until another thread changes something or calls close(). With auto_advance=False, time
only moves through advance() (or the clock itself) and blocked callers wait for it.
"""

from __future__ import annotations

import builtins
import copy
import functools
import heapq
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from pegboard.domain.errors import Conflict, Invalid, NotFound
from pegboard.domain.ports.cluster import (
    ClusterTarget,
    JsonObject,
    LogStreamDropped,
    ResourceKind,
    WatchEvent,
)

from . import cluster_script as steps
from .clock import FakeClock
from .cluster_script import PodScript, Step
from .kube_objects import (
    NODE_NAME,
    PLURAL,
    WAITING_NOT_ERRORS,
    apply_defaults,
    container_status,
    event_object,
    fake_hex,
    generated_suffix,
    recompute_phase,
    set_condition,
    validate,
)
from .kube_selectors import EVENT_FIELDS, JOB_FIELDS, POD_FIELDS, field_matcher, label_matcher
from .kube_time import format_nanos, format_time, parse_nanos, to_nanos

__all__ = ["FakeCluster", "FakeLogStream", "FakeRequest", "PodMatcher", "SteppableClock"]

PodMatcher = Callable[[Mapping[str, Any]], bool]
_T = TypeVar("_T")
_API_VERSION = {"Pod": "v1", "Job": "batch/v1"}
_PROPAGATIONS = ("Background", "Foreground", "Orphan")
_OPERATIONS = frozenset(
    {"target", "create", "read", "list", "watch", "stream_logs", "list_events", "delete"}
)


class SteppableClock(Protocol):
    """What FakeCluster needs from a clock: FakeClock satisfies it."""

    def now(self) -> float: ...

    def advance(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class FakeRequest:
    """One call made on the fake, for assertions (`cluster.requests`)."""

    operation: str
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Failure:
    operation: str
    error: BaseException
    remaining: int
    when: Callable[[FakeRequest], bool] | None


@dataclass
class _LogEntry:
    nanos: int
    stamp: str
    data: bytes = b""
    marker: str | None = None  # "drop" or "end": one-shot points in the follow stream
    consumed: bool = False


@dataclass
class _PodRuntime:
    """The kubelet's view of one pod: its log records per container and whether it is done."""

    uid: str
    namespace: str
    name: str
    logs: dict[str, list[_LogEntry]]
    finished: set[str] = field(default_factory=set)  # containers whose output ended
    pending: dict[str, bytes] = field(default_factory=dict)  # partial lines awaiting a newline

    def flush(self, container: str, nanos: int) -> None:
        """The container exited: its pending partial line becomes the last record."""
        rest = self.pending.pop(container, b"")
        if rest:
            self.logs[container].append(_LogEntry(nanos, format_nanos(nanos), rest))

    gone: bool = False  # deleted or evicted: follows end


@dataclass(order=True)
class _Scheduled:
    due: float
    seq: int
    action: Callable[[float], None] | None = field(compare=False)  # runs under the lock
    hook: Callable[[], object] | None = field(compare=False, default=None)  # runs outside it


@dataclass
class _History:
    time: float
    type: str
    kind: str
    new: JsonObject
    old: JsonObject | None


class FakeLogStream:
    """A follow/non-follow log stream of one container; close() may come from any thread."""

    def __init__(
        self,
        cluster: FakeCluster,
        runtime: _PodRuntime,
        *,
        container: str,
        since_nanos: int | None,
        timestamps: bool,
        follow: bool,
    ) -> None:
        self._cluster = cluster
        self._runtime = runtime
        self.container = container
        self.since_nanos = since_nanos
        self.timestamps = timestamps
        self.follow = follow
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self._cluster._read_log(self, self._runtime)

    def close(self) -> None:
        self._cluster._close_stream(self)


class FakeCluster:
    """An in-memory Cluster with a scriptable kubelet, a Jobs controller and failure injection."""

    def __init__(
        self,
        clock: SteppableClock | None = None,
        *,
        context: str = "fake",
        namespace: str | None = "default",
        auto_advance: bool = True,
        default_script: PodScript | None = None,
        truncate_since_time: bool = False,
    ) -> None:
        self.clock: SteppableClock = clock if clock is not None else FakeClock()
        self.context = context
        self.namespace = namespace
        self.auto_advance = auto_advance
        # A pod nobody scripted starts after 1 s and exits 0 a second later.
        self.default_script = (
            default_script if default_script is not None else PodScript.completes()
        )
        # Real apiservers pass sinceTime to the kubelet with whole-second precision.
        self.truncate_since_time = truncate_since_time
        self._cond = threading.Condition(threading.RLock())
        self._objects: dict[tuple[str, str, str], JsonObject] = {}
        self._uids: dict[str, tuple[str, str, str]] = {}
        self._events: list[JsonObject] = []
        self._history: list[_History] = []
        self._schedule: list[_Scheduled] = []
        self._runtimes: dict[str, _PodRuntime] = {}
        self._scripts: list[tuple[PodMatcher, PodScript]] = []
        self._failures: list[_Failure] = []
        self._requests: list[FakeRequest] = []
        self._deletions: list[tuple[str, str, str, str]] = []
        self._seq = itertools.count(1)
        self._rv = 0
        self._step_time: float | None = None  # virtual time of the scripted step being applied

    # ----------------------------------------------------------------- scripting and injection

    def script_pod(self, target: str | PodMatcher, script: PodScript) -> None:
        """Script pods created from now on: by pod name, by Job name (its pods), or a predicate.

        The latest matching script wins. When `target` names an existing pod, its script starts now.
        """
        matcher: PodMatcher
        if isinstance(target, str):
            name = target

            def matcher(pod: Mapping[str, Any]) -> bool:
                meta = pod.get("metadata") or {}
                return (
                    meta.get("name") == name or (meta.get("labels") or {}).get("job-name") == name
                )

        else:
            matcher = target
        with self._cond:
            self._scripts.insert(0, (matcher, script))
            if isinstance(target, str):
                for (kind, _, name_), pod in self._objects.items():
                    if (
                        kind == "Pod"
                        and name_ == target
                        and pod["metadata"]["uid"] in self._runtimes
                    ):
                        self._schedule_steps(pod, script.steps, self.clock.now())

    def act(self, pod: str, *script_steps: Step, namespace: str | None = None) -> None:
        """Apply kubelet steps to an existing pod, `at` counted from now (e.g. DeletePod())."""
        with self._cond:
            obj = self._find("Pod", pod, namespace)
            self._schedule_steps(obj, script_steps, self.clock.now())
        self._catch_up()

    def fail_next(
        self,
        operation: str,
        error: BaseException,
        *,
        times: int = 1,
        when: Callable[[FakeRequest], bool] | None = None,
    ) -> None:
        """Make the next `times` calls of `operation` (a Cluster method name) raise `error`."""
        if operation not in _OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; one of {sorted(_OPERATIONS)}")
        with self._cond:
            self._failures.append(_Failure(operation, error, times, when))

    def add_event(
        self,
        involved: str,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        kind: ResourceKind = ResourceKind.POD,
        namespace: str | None = None,
        component: str = "kubelet",
    ) -> JsonObject:
        """Record an Event about an existing Pod or Job."""
        with self._cond:
            obj = self._find(kind.value, involved, namespace)
            return _clone(self._add_event(obj, type, reason, message, component))

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, firing every scripted step that falls due."""
        with self._cond:
            target = self.clock.now() + seconds
        while True:
            # Step from one scripted step to the next so hooks see the clock at their own time.
            with self._cond:
                moved, hook = self._step_forward_locked(target)
                self._cond.notify_all()  # waiters re-check their virtual deadlines
            if hook is not None:
                hook()
            if not moved:
                return

    def schedule(self, delay: float, fn: Callable[[], object]) -> None:
        """Call `fn()` when virtual time reaches now + delay (outside the fake's lock)."""
        with self._cond:
            self._push(self.clock.now() + delay, None, fn)

    # ----------------------------------------------------------------- inspection

    @property
    def pods(self) -> builtins.list[JsonObject]:
        """Every stored pod (all namespaces), in creation order."""
        return self._stored("Pod")

    @property
    def jobs(self) -> builtins.list[JsonObject]:
        return self._stored("Job")

    @property
    def events(self) -> builtins.list[JsonObject]:
        with self._cond:
            return _clone(self._events)

    @property
    def requests(self) -> builtins.list[FakeRequest]:
        """Every call made on the port, in order (including ones that failed)."""
        with self._cond:
            return builtins.list(self._requests)

    @property
    def deletions(self) -> builtins.list[tuple[str, str, str, str]]:
        """(kind, namespace, name, propagation) of every delete call that found its object."""
        with self._cond:
            return builtins.list(self._deletions)

    def pod(self, name: str, namespace: str | None = None) -> JsonObject:
        with self._cond:
            return _clone(self._find("Pod", name, namespace))

    def job(self, name: str, namespace: str | None = None) -> JsonObject:
        with self._cond:
            return _clone(self._find("Job", name, namespace))

    def logs(self, pod: str, container: str | None = None, namespace: str | None = None) -> bytes:
        """Everything a container has written so far (no timestamps)."""
        with self._cond:
            obj = self._find("Pod", pod, namespace)
            runtime = self._runtimes[obj["metadata"]["uid"]]
            name = container or obj["spec"]["containers"][0]["name"]
            return b"".join(e.data for e in runtime.logs[name] if e.marker is None)

    def __contains__(self, item: object) -> bool:
        """`"name" in cluster` for any Pod or Job; `(ResourceKind.JOB, "name") in cluster`."""
        with self._cond:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], ResourceKind):
                return any(k == item[0].value and n == item[1] for k, _, n in self._objects)
            return any(n == item for _, _, n in self._objects)

    # ----------------------------------------------------------------- the Cluster port

    def target(self) -> ClusterTarget:
        self._begin(FakeRequest("target"))
        return ClusterTarget(self.context, self.namespace)

    def create(
        self, manifest: Mapping[str, Any], *, namespace: str, dry_run: bool = False
    ) -> JsonObject:
        meta = manifest.get("metadata") or {}
        kind = str(manifest.get("kind"))
        request = FakeRequest(
            "create", kind, namespace, meta.get("name"), {"dry_run": dry_run, "body": manifest}
        )
        self._begin(request)
        if kind not in PLURAL:
            raise NotFound(f"the server could not find the requested resource ({kind})", status=404)
        with self._cond:
            obj = self._store_new(
                copy.deepcopy(dict(manifest)), namespace, dry_run=dry_run
            )  # user input
            result = _clone(obj)
        self._catch_up()
        return result

    def read(self, kind: ResourceKind, name: str, *, namespace: str) -> JsonObject | None:
        self._begin(FakeRequest("read", kind.value, namespace, name))
        with self._cond:
            obj = self._objects.get((kind.value, namespace, name))
            return _clone(obj) if obj is not None else None

    def list(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[JsonObject]:
        params = {"label_selector": label_selector, "field_selector": field_selector}
        self._begin(FakeRequest("list", kind.value, namespace, None, params))
        matches = self._matcher(kind, namespace, label_selector, field_selector)
        with self._cond:
            found = [o for (k, _, _), o in self._objects.items() if k == kind.value and matches(o)]
            # etcd lists by key, i.e. by name within a namespace.
            found.sort(key=lambda o: o["metadata"]["name"])
            return _clone(found)

    def watch(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout: float,
    ) -> Iterator[WatchEvent]:
        params = {
            "label_selector": label_selector,
            "field_selector": field_selector,
            "timeout": timeout,
        }
        self._begin(FakeRequest("watch", kind.value, namespace, None, params))
        matches = self._matcher(kind, namespace, label_selector, field_selector)
        with self._cond:
            deadline = self.clock.now() + timeout
            initial = [
                _clone(o)
                for (k, _, _), o in sorted(self._objects.items(), key=lambda i: i[0][2])
                if k == kind.value and matches(o)
            ]
            start = len(self._history)
        return self._watch_events(kind.value, matches, initial, start, deadline)

    def stream_logs(
        self,
        pod: str,
        *,
        namespace: str,
        container: str,
        since_time: str | None = None,
        timestamps: bool = True,
        follow: bool = True,
    ) -> FakeLogStream:
        params = {
            "container": container,
            "since_time": since_time,
            "timestamps": timestamps,
            "follow": follow,
        }
        self._begin(FakeRequest("stream_logs", "Pod", namespace, pod, params))
        since_nanos = None
        if since_time is not None:
            try:
                since_nanos = parse_nanos(since_time)
            except ValueError:
                raise Invalid(f"invalid sinceTime {since_time!r}", status=400) from None
            if self.truncate_since_time:
                since_nanos -= since_nanos % 1_000_000_000
        with self._cond:
            obj = self._objects.get(("Pod", namespace, pod))
            if obj is None:
                raise NotFound(f'pods "{pod}" not found', status=404)
            names = [c["name"] for c in obj["spec"]["containers"]]
            if container not in names:
                raise Invalid(f"container {container} is not valid for pod {pod}", status=400)
            status = next(
                (s for s in obj["status"].get("containerStatuses", []) if s["name"] == container),
                None,
            )
            state = (status or {}).get("state", {})
            if "running" not in state and "terminated" not in state:
                reason = state.get("waiting", {}).get("reason", "ContainerCreating")
                raise Invalid(
                    f'container "{container}" in pod "{pod}" is waiting to start: {reason}',
                    status=400,
                )
            runtime = self._runtimes[obj["metadata"]["uid"]]
        return FakeLogStream(
            self,
            runtime,
            container=container,
            since_nanos=since_nanos,
            timestamps=timestamps,
            follow=follow,
        )

    def list_events(
        self, *, namespace: str, involved_name: str, involved_uid: str | None = None
    ) -> builtins.list[JsonObject]:
        params = {"involved_uid": involved_uid}
        self._begin(FakeRequest("list_events", "Event", namespace, involved_name, params))
        selector = f"involvedObject.name={involved_name}"
        if involved_uid:
            selector += f",involvedObject.uid={involved_uid}"
        matches = field_matcher(selector, EVENT_FIELDS)
        with self._cond:
            return _clone(
                [e for e in self._events if e["metadata"]["namespace"] == namespace and matches(e)]
            )

    def delete(
        self, kind: ResourceKind, name: str, *, namespace: str, propagation: str = "Background"
    ) -> bool:
        params = {"propagation": propagation}
        self._begin(FakeRequest("delete", kind.value, namespace, name, params))
        if propagation not in _PROPAGATIONS:
            raise Invalid(
                f'DeleteOptions.propagationPolicy: Unsupported value: "{propagation}"', status=422
            )
        with self._cond:
            obj = self._objects.get((kind.value, namespace, name))
            if obj is None:
                return False
            self._deletions.append((kind.value, namespace, name, propagation))
            at = self.clock.now()
            if kind is ResourceKind.JOB:
                self._delete_job(obj, propagation, at)
            else:
                self._remove(obj, at)
        self._catch_up()
        return True

    # ----------------------------------------------------------------- store internals

    def _begin(self, request: FakeRequest) -> None:
        """Log the call, fire steps that fell due (the clock may have moved), inject failures."""
        self._catch_up()
        with self._cond:
            self._requests.append(request)
            for failure in self._failures:
                if failure.operation == request.operation and (
                    failure.when is None or failure.when(request)
                ):
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                    raise failure.error

    def _stored(self, kind: str) -> builtins.list[JsonObject]:
        with self._cond:
            return _clone([o for (k, _, _), o in self._objects.items() if k == kind])

    def _find(self, kind: str, name: str, namespace: str | None) -> JsonObject:
        for (k, ns, n), obj in self._objects.items():
            if k == kind and n == name and (namespace is None or ns == namespace):
                return obj
        raise KeyError(f"no {kind} named {name!r}")

    def _matcher(
        self,
        kind: ResourceKind,
        namespace: str,
        label_selector: str | None,
        field_selector: str | None,
    ) -> Callable[[Mapping[str, Any]], bool]:
        labels = label_matcher(label_selector)
        fields = field_matcher(
            field_selector, POD_FIELDS if kind is ResourceKind.POD else JOB_FIELDS
        )

        def matches(obj: Mapping[str, Any]) -> bool:
            return obj["metadata"]["namespace"] == namespace and labels(obj) and fields(obj)

        return matches

    def _now(self) -> float:
        """Virtual time of the step being applied, else the clock."""
        return self.clock.now() if self._step_time is None else self._step_time

    def _next_uid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._seq):012x}"

    def _bump(self, obj: JsonObject) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def _record(self, event_type: str, obj: JsonObject, old: JsonObject | None, at: float) -> None:
        snapshot = _clone(obj)
        self._history.append(_History(at, event_type, obj["kind"], snapshot, old))
        self._cond.notify_all()

    def _store_new(self, obj: JsonObject, namespace: str, *, dry_run: bool) -> JsonObject:
        kind = obj["kind"]
        validate(obj, namespace=namespace)
        meta = obj["metadata"]
        if not meta.get("name"):
            meta["name"] = meta["generateName"] + generated_suffix(next(self._seq))
        if (kind, namespace, meta["name"]) in self._objects:
            raise Conflict(f'{PLURAL[kind]} "{meta["name"]}" already exists', status=409)
        at = self._now()
        uid = self._next_uid()
        obj["apiVersion"] = _API_VERSION[kind]
        meta.update(namespace=namespace, uid=uid, creationTimestamp=format_time(at))
        if kind == "Job":
            meta["generation"] = 1
        apply_defaults(obj, uid=uid)
        if dry_run:
            return obj
        self._bump(obj)
        self._objects[(kind, namespace, meta["name"])] = obj
        self._uids[uid] = (kind, namespace, meta["name"])
        self._record("ADDED", obj, None, at)
        if kind == "Pod":
            self._start_kubelet(obj, at)
        else:
            self._push(at, functools.partial(self._job_create_pod, uid))
        return obj

    def _by_uid(self, uid: str) -> JsonObject | None:
        key = self._uids.get(uid)
        return self._objects.get(key) if key is not None else None

    def _mutate(self, obj: JsonObject, change: Callable[[JsonObject], None], at: float) -> None:
        old = _clone(obj)
        change(obj)
        self._bump(obj)
        self._record("MODIFIED", obj, old, at)

    def _remove(self, obj: JsonObject, at: float) -> None:
        meta = obj["metadata"]
        del self._objects[(obj["kind"], meta["namespace"], meta["name"])]
        self._uids.pop(meta["uid"], None)
        self._bump(obj)
        self._record("DELETED", obj, None, at)
        runtime = self._runtimes.get(meta["uid"])
        if runtime is not None:
            runtime.gone = True
        if obj["kind"] == "Pod":
            self._job_pod_gone(obj, at)

    def _delete_job(self, job: JsonObject, propagation: str, at: float) -> None:
        uid = job["metadata"]["uid"]
        children = [
            o
            for (k, _, _), o in self._objects.items()
            if k == "Pod"
            and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences", []))
        ]
        job["metadata"]["deletionTimestamp"] = format_time(at)
        if propagation == "Foreground":
            self._mutate(job, lambda j: j["metadata"].update(finalizers=["foregroundDeletion"]), at)
            for child in children:
                self._remove(child, at)
            self._remove(job, at)
        elif propagation == "Background":
            self._remove(job, at)
            for child in children:
                self._remove(child, at)
        else:
            self._remove(job, at)
            for child in children:
                self._mutate(child, lambda p: p["metadata"].pop("ownerReferences", None), at)

    def _add_event(
        self, obj: JsonObject, event_type: str, reason: str, message: str, component: str
    ) -> JsonObject:
        meta = obj["metadata"]
        at = self._now()
        seq = next(self._seq)
        involved = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        event = event_object(
            name=f"{meta['name']}.{fake_hex(str(seq), 16)}",
            namespace=meta["namespace"],
            uid=self._next_uid(),
            involved=involved,
            event_type=event_type,
            reason=reason,
            message=message,
            component=component,
            stamp=format_time(at),
        )
        self._rv += 1
        event["metadata"]["resourceVersion"] = str(self._rv)
        self._events.append(event)
        self._cond.notify_all()
        return event

    # ----------------------------------------------------------------- virtual time

    def _push(
        self,
        due: float,
        action: Callable[[float], None] | None,
        hook: Callable[[], object] | None = None,
    ) -> None:
        heapq.heappush(self._schedule, _Scheduled(due, next(self._seq), action, hook))

    def _apply_due_locked(self, until: float) -> Callable[[], object] | None:
        """Apply due state steps in order; stop at (and return) the first due hook."""
        while self._schedule and self._schedule[0].due <= until:
            item = heapq.heappop(self._schedule)
            if item.hook is not None:
                return item.hook
            if item.action is not None:
                self._step_time = item.due
                try:
                    item.action(item.due)
                finally:
                    self._step_time = None
        return None

    def _catch_up(self) -> None:
        while True:
            with self._cond:
                hook = self._apply_due_locked(self.clock.now())
            if hook is None:
                return
            hook()

    def _step_forward_locked(self, deadline: float) -> tuple[bool, Callable[[], object] | None]:
        """Move the clock to the next scheduled step before `deadline` (True), else to it (False)."""
        now = self.clock.now()
        if self._schedule and self._schedule[0].due <= deadline:
            due = self._schedule[0].due
            if due > now:
                self.clock.advance(due - now)
            hook = self._apply_due_locked(max(due, now))
            self._cond.notify_all()
            return True, hook
        if deadline != float("inf") and deadline > now:
            self.clock.advance(deadline - now)
            self._cond.notify_all()
        return False, None

    # ----------------------------------------------------------------- watch and logs

    def _translate(self, entry: _History, kind: str, matches: Callable[[Any], bool]) -> str | None:
        """The event type a filtered watch sees: objects moving in or out of the selection."""
        if entry.kind != kind:
            return None
        now_in = matches(entry.new)
        if entry.type != "MODIFIED":
            return entry.type if now_in else None
        was_in = entry.old is not None and matches(entry.old)
        if now_in and was_in:
            return "MODIFIED"
        if now_in:
            return "ADDED"
        return "DELETED" if was_in else None

    def _watch_events(
        self,
        kind: str,
        matches: Callable[[Any], bool],
        initial: builtins.list[JsonObject],
        index: int,
        deadline: float,
    ) -> Iterator[WatchEvent]:
        for obj in initial:
            yield WatchEvent("ADDED", obj)
        while True:
            pending: builtins.list[WatchEvent] = []
            hook = None
            with self._cond:
                while index < len(self._history) and not pending:
                    entry = self._history[index]
                    if entry.time > deadline:
                        return
                    index += 1
                    event_type = self._translate(entry, kind, matches)
                    if event_type is not None:
                        pending.append(WatchEvent(event_type, _clone(entry.new)))
                if not pending:
                    if self.clock.now() >= deadline:
                        return
                    if self.auto_advance:
                        _, hook = self._step_forward_locked(deadline)
                    else:
                        self._cond.wait()
            if hook is not None:
                hook()
            yield from pending

    def _close_stream(self, stream: FakeLogStream) -> None:
        with self._cond:
            stream.closed = True
            self._cond.notify_all()

    def _read_log(self, stream: FakeLogStream, runtime: _PodRuntime) -> Iterator[bytes]:
        entries = runtime.logs[stream.container]
        index = 0
        while True:
            chunk = None
            hook = None
            with self._cond:
                if stream.closed:
                    return
                while index < len(entries) and chunk is None:
                    entry = entries[index]
                    index += 1
                    if stream.since_nanos is not None and entry.nanos < stream.since_nanos:
                        continue
                    if entry.marker is not None:
                        if not stream.follow or entry.consumed:
                            continue
                        entry.consumed = True
                        if entry.marker == "drop":
                            raise LogStreamDropped(
                                f"log stream of {runtime.name}/{stream.container} dropped"
                            )
                        return
                    prefix = entry.stamp.encode() + b" " if stream.timestamps else b""
                    chunk = prefix + entry.data
                if chunk is None:
                    if not stream.follow or runtime.gone or stream.container in runtime.finished:
                        return
                    if self.auto_advance and self._schedule:
                        _, hook = self._step_forward_locked(float("inf"))
                    else:
                        self._cond.wait()
            if hook is not None:
                hook()
            if chunk is not None:
                yield chunk

    # ----------------------------------------------------------------- the scripted kubelet

    def _script_for(self, pod: JsonObject) -> PodScript:
        for matcher, script in self._scripts:
            if matcher(pod):
                return script
        return self.default_script

    def _start_kubelet(self, pod: JsonObject, at: float) -> None:
        meta = pod["metadata"]
        names = [c["name"] for c in pod["spec"]["containers"]]
        self._runtimes[meta["uid"]] = _PodRuntime(
            meta["uid"], meta["namespace"], meta["name"], {n: [] for n in names}
        )
        script = self._script_for(pod)
        if not any(isinstance(s, steps.Unschedulable) for s in script.steps):
            self._push(at, functools.partial(self._on_pod, meta["uid"], change=self._schedule_pod))
        self._schedule_steps(pod, script.steps, at)

    def _schedule_steps(self, pod: JsonObject, script_steps: tuple[Step, ...], base: float) -> None:
        uid = pod["metadata"]["uid"]
        for step in sorted(script_steps, key=lambda s: s.at):  # stable: script order at equal times
            if isinstance(step, steps.Call):
                self._push(base + step.at, None, step.fn)
            else:
                self._push(
                    base + step.at,
                    functools.partial(
                        self._on_pod, uid, change=functools.partial(self._apply_step, step=step)
                    ),
                )

    def _on_pod(self, uid: str, at: float, change: Callable[[JsonObject, float], None]) -> None:
        pod = self._by_uid(uid)
        if pod is not None and pod["kind"] == "Pod":
            change(pod, at)

    def _targets(
        self, pod: JsonObject, container: str | None, key: str
    ) -> builtins.list[JsonObject]:
        statuses: builtins.list[JsonObject] = pod["status"].get(key, [])
        return [s for s in statuses if container is None or s["name"] == container]

    def _schedule_pod(self, pod: JsonObject, at: float) -> None:
        stamp = format_time(at)
        init = pod["spec"].get("initContainers", [])

        def change(p: JsonObject) -> None:
            status = p["status"]
            p["spec"]["nodeName"] = NODE_NAME
            status.update(hostIP="10.0.0.1", startTime=stamp)
            set_condition(status, "PodScheduled", True, stamp)
            set_condition(status, "Initialized", not init, stamp)
            set_condition(status, "Ready", False, stamp)
            set_condition(status, "ContainersReady", False, stamp)
            waiting = "PodInitializing" if init else "ContainerCreating"
            if init:
                status["initContainerStatuses"] = [
                    container_status(c, "PodInitializing") for c in init
                ]
            status["containerStatuses"] = [
                container_status(c, waiting) for c in p["spec"]["containers"]
            ]

        self._mutate(pod, change, at)
        meta = pod["metadata"]
        message = f"Successfully assigned {meta['namespace']}/{meta['name']} to {NODE_NAME}"
        self._add_event(pod, "Normal", "Scheduled", message, "default-scheduler")

    def _apply_step(self, pod: JsonObject, at: float, *, step: Step) -> None:
        stamp = format_time(at)
        runtime = self._runtimes[pod["metadata"]["uid"]]
        if isinstance(step, steps.Log | steps.DropLogStream | steps.EndLogStream):
            self._append_log(runtime, pod, step, at)
        elif isinstance(step, steps.Event):
            self._add_event(pod, step.type, step.reason, step.message, step.component)
        elif isinstance(step, steps.DeletePod):
            self._remove(pod, at)
        elif isinstance(step, steps.Unschedulable):
            self._mutate(
                pod,
                lambda p: set_condition(
                    p["status"],
                    "PodScheduled",
                    False,
                    stamp,
                    reason="Unschedulable",
                    message=step.message,
                ),
                at,
            )
            self._add_event(pod, "Warning", "FailedScheduling", step.message, "default-scheduler")
        elif isinstance(step, steps.Evict):
            for name in runtime.logs:
                runtime.flush(name, to_nanos(at))
            runtime.gone = True

            def evict(p: JsonObject) -> None:
                p["status"].update(phase="Failed", reason=step.reason, message=step.message)
                set_condition(p["status"], "Ready", False, stamp, reason="PodFailed")

            self._mutate(pod, evict, at)
            self._add_event(pod, "Warning", step.reason, step.message, "kubelet")
            self._job_pod_terminal(pod, at)
        else:
            self._container_step(pod, runtime, step, at)

    def _append_log(
        self,
        runtime: _PodRuntime,
        pod: JsonObject,
        step: steps.Log | steps.DropLogStream | steps.EndLogStream,
        at: float,
    ) -> None:
        names = (
            [step.container] if step.container else [c["name"] for c in pod["spec"]["containers"]]
        )
        nanos = to_nanos(at)
        stamp = format_nanos(nanos)
        if isinstance(step, steps.Log) and step.timestamp is not None:
            stamp, nanos = step.timestamp, parse_nanos(step.timestamp)
        for name in names:
            entries = runtime.logs[name]
            if isinstance(step, steps.Log):
                data = runtime.pending.pop(name, b"") + step.data
                cut = data.rfind(b"\n") + 1
                complete, rest = data[:cut], data[cut:]
                if step.partial and rest:
                    complete, rest = data, b""
                entries.extend(_LogEntry(nanos, stamp, rec) for rec in _records(complete))
                if rest:
                    runtime.pending[name] = rest
            else:
                marker = "drop" if isinstance(step, steps.DropLogStream) else "end"
                entries.append(_LogEntry(nanos, stamp, marker=marker))
        self._cond.notify_all()

    def _container_step(self, pod: JsonObject, runtime: _PodRuntime, step: Step, at: float) -> None:
        stamp = format_time(at)
        if isinstance(step, steps.InitWaiting):

            def init_wait(p: JsonObject) -> None:
                for status in self._targets(p, step.container, "initContainerStatuses"):
                    status["state"] = {"waiting": {"reason": step.reason, "message": step.message}}

            self._mutate(pod, init_wait, at)
            if step.reason not in WAITING_NOT_ERRORS:
                self._add_event(pod, "Warning", "Failed", step.message or step.reason, "kubelet")
            return
        if isinstance(step, steps.Waiting):

            def wait(p: JsonObject) -> None:
                for status in self._targets(p, step.container, "containerStatuses"):
                    status["state"] = {"waiting": {"reason": step.reason, "message": step.message}}
                    status.update(ready=False, started=False)
                recompute_phase(p, stamp)

            self._mutate(pod, wait, at)
            if step.reason not in WAITING_NOT_ERRORS:
                self._add_event(pod, "Warning", "Failed", step.message or step.reason, "kubelet")
            return
        if isinstance(step, steps.Running):
            started: builtins.list[str] = []

            def run(p: JsonObject) -> None:
                status_obj = p["status"]
                for init in status_obj.get("initContainerStatuses", []):
                    if "terminated" not in init["state"]:
                        init["state"] = {"terminated": _terminated(0, "Completed", "", stamp)}
                set_condition(status_obj, "Initialized", True, stamp)
                for status in self._targets(p, step.container, "containerStatuses"):
                    container_id = "containerd://" + fake_hex(
                        p["metadata"]["uid"] + status["name"], 64
                    )
                    status.update(
                        state={"running": {"startedAt": stamp}},
                        ready=True,
                        started=True,
                        containerID=container_id,
                        imageID=f"{status['image']}@sha256:{fake_hex(status['image'], 64)}",
                    )
                    started.append(status["name"])
                status_obj["podIP"] = "10.244.0.10"
                status_obj["podIPs"] = [{"ip": "10.244.0.10"}]
                recompute_phase(p, stamp)

            self._mutate(pod, run, at)
            for name in started:
                self._add_event(pod, "Normal", "Started", f"Started container {name}", "kubelet")
            return
        if isinstance(step, steps.Exit):
            reason = step.reason or ("Completed" if step.code == 0 else "Error")

            def terminate(p: JsonObject) -> None:
                for status in self._targets(p, step.container, "containerStatuses"):
                    began = status["state"].get("running", {}).get("startedAt", stamp)
                    status.update(ready=False, started=False)
                    status["state"] = {"terminated": _terminated(step.code, reason, began, stamp)}
                    status["state"]["terminated"]["containerID"] = status.get("containerID", "")
                    if step.message:
                        status["state"]["terminated"]["message"] = step.message
                    runtime.flush(status["name"], to_nanos(at))
                    runtime.finished.add(status["name"])
                recompute_phase(p, stamp)

            self._mutate(pod, terminate, at)
            if pod["status"]["phase"] in ("Succeeded", "Failed"):
                self._job_pod_terminal(pod, at)

    # ----------------------------------------------------------------- the Jobs controller

    def _job_create_pod(self, job_uid: str, at: float) -> None:
        job = self._by_uid(job_uid)
        if job is None or job["kind"] != "Job":
            return
        meta = job["metadata"]
        template = _clone(job["spec"]["template"])
        pod_meta = template.get("metadata") or {}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{meta['name']}-",
                "labels": dict(pod_meta.get("labels") or {}),
                "annotations": dict(pod_meta.get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": job_uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template["spec"],
        }
        if not pod["metadata"]["annotations"]:
            del pod["metadata"]["annotations"]
        created = self._store_new(pod, meta["namespace"], dry_run=False)

        def account(j: JsonObject) -> None:
            j["status"].setdefault("startTime", format_time(at))
            j["status"]["active"] = j["status"].get("active", 0) + 1
            j["status"].setdefault("ready", 0)

        self._mutate(job, account, at)
        message = f"Created pod: {created['metadata']['name']}"
        self._add_event(job, "Normal", "SuccessfulCreate", message, "job-controller")

    def _owner_job(self, pod: JsonObject) -> JsonObject | None:
        """The live Job owning this pod (one being deleted no longer counts its pods)."""
        for ref in pod["metadata"].get("ownerReferences", []):
            if ref.get("kind") == "Job":
                job = self._by_uid(ref.get("uid", ""))
                if job is not None and "deletionTimestamp" not in job["metadata"]:
                    return job
        return None

    def _job_pod_terminal(self, pod: JsonObject, at: float) -> None:
        job = self._owner_job(pod)
        if job is None or any(
            c["type"] in ("Complete", "Failed") for c in job["status"].get("conditions", [])
        ):
            return
        succeeded = pod["status"]["phase"] == "Succeeded"
        self._job_account(job, succeeded=succeeded, at=at)
        # Mark the pod as counted, so a later delete is not counted again.
        pod["metadata"].setdefault("annotations", {})["fake.pegboard.io/counted"] = "true"

    def _job_pod_gone(self, pod: JsonObject, at: float) -> None:
        counted = (pod["metadata"].get("annotations") or {}).get("fake.pegboard.io/counted")
        if counted or pod["status"].get("phase") in ("Succeeded", "Failed"):
            return
        job = self._owner_job(pod)
        if job is not None and not any(
            c["type"] in ("Complete", "Failed") for c in job["status"].get("conditions", [])
        ):
            self._job_account(job, succeeded=False, at=at)

    def _job_account(self, job: JsonObject, *, succeeded: bool, at: float) -> None:
        stamp = format_time(at)
        spec = job["spec"]
        status = job["status"]
        retry = False

        def count(j: JsonObject) -> None:
            nonlocal retry
            s = j["status"]
            s["active"] = max(0, s.get("active", 0) - 1)
            if not s["active"]:
                s.pop("active")
            key = "succeeded" if succeeded else "failed"
            s[key] = s.get(key, 0) + 1
            if s.get("succeeded", 0) >= spec.get("completions", 1):
                set_condition(s, "Complete", True, stamp)
                s["completionTime"] = stamp
            elif s.get("failed", 0) > spec.get("backoffLimit", 6):
                set_condition(
                    s,
                    "Failed",
                    True,
                    stamp,
                    reason="BackoffLimitExceeded",
                    message="Job has reached the specified backoff limit",
                )
            else:
                retry = True

        self._mutate(job, count, at)
        if retry:
            self._push(at, functools.partial(self._job_create_pod, job["metadata"]["uid"]))
        elif status.get("conditions"):
            last = status["conditions"][-1]
            reason = "Completed" if last["type"] == "Complete" else "BackoffLimitExceeded"
            event_type = "Normal" if last["type"] == "Complete" else "Warning"
            self._add_event(
                job, event_type, reason, f"Job {last['type'].lower()}", "job-controller"
            )


def _records(data: bytes) -> builtins.list[bytes]:
    """Split at b"\\n" only (a \\r stays inside its line, as the kubelet keeps it)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _terminated(code: int, reason: str, started: str, finished: str) -> dict[str, Any]:
    return {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}


def _clone(value: _T) -> _T:
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than deepcopy."""
    if isinstance(value, dict):
        return cast(_T, {key: _clone(item) for key, item in value.items()})
    if isinstance(value, list):
        return cast(_T, [_clone(item) for item in value])
    return value

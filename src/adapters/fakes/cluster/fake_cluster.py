"""FakeCluster: an in-memory Kubernetes that behaves like the real adapter, in virtual time.

Objects are the dicts the apiserver would return (uid, resourceVersion, creationTimestamp, status
with containerStatuses and Job conditions); errors are the same PortError subclasses with the same
statuses. A scripted kubelet (PodScript) moves pods through their life, a Jobs controller creates
each Job's pod and sets Complete/Failed, and fail_next() injects failures. What the apiserver,
kubelet and controllers do to objects comes from `pegboard.adapters.kube_semantics`, shared with
the Kubernetes API sandbox.

Time: everything runs on a FakeClock. With auto_advance (the default) a caller that would block
(a watch or a log follow waiting for something new) moves the clock to the next scripted step, so
tests never sleep; when nothing is scheduled a watch returns at its deadline and a log follow
blocks until another thread changes something or calls close(). With auto_advance=False, time
only moves through advance() (or the clock itself) and blocked callers wait for it.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pegboard.adapters.kube_semantics import garbage
from pegboard.adapters.kube_semantics import logs as log_rules
from pegboard.adapters.kube_semantics.kubetime import NANOS, format_rfc3339, seconds_to_nanos
from pegboard.adapters.kube_semantics.listing import list_page, parse_list_options
from pegboard.adapters.kube_semantics.resources import BY_KIND, EVENTS, PODS
from pegboard.adapters.kube_semantics.selectors import field_matcher, selector_matcher
from pegboard.adapters.kube_semantics.status import StatusError, not_found
from pegboard.adapters.kube_semantics.validation import validate
from pegboard.adapters.kubernetes_errors import error_for_status
from pegboard.domain.errors import PortError
from pegboard.domain.ports.cluster import (
    ClusterTarget,
    ContainerNotRunning,
    ExecInput,
    ExecResult,
    ExecTimedOut,
    JsonObject,
    ListPage,
    OutputSink,
    ResourceKind,
    WatchEvent,
)

from ..clock import FakeClock
from ..failures import FailsOnDemand, InjectedFailures
from ..shell import FakeHost
from .jobs import FakeJobsController
from .kubelet import FakeKubelet, PodMatcher, name_matcher
from .logs import FakeLogStream, PodLogs, read_log
from .script import PodScript, Step
from .store import FakeStore, clone, merge_patch_into
from .userland import run_in_host
from .virtual_time import SteppableClock, VirtualSchedule
from .watch import watch_events

__all__ = ["FakeCluster", "FakeLogStream", "FakeRequest", "PodMatcher", "SteppableClock"]

_OPERATIONS = frozenset(
    {
        "target",
        "create",
        "read",
        "list",
        "watch",
        "stream_logs",
        "list_events",
        "list_page",
        "watch_events",
        "replace",
        "patch",
        "delete",
        "exec",
    }
)
_EXEC_CHUNK = 64 * 1024  # output reaches a sink in pieces of at most this, as a stream would


@dataclass(frozen=True)
class FakeRequest:
    """One call made on the fake, for assertions (`cluster.requests`)."""

    operation: str
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def _as_port_errors() -> Iterator[None]:
    """The apiserver's answer as the PortError the real adapter raises for it."""
    try:
        yield
    except StatusError as exc:
        raise error_for_status(exc.code, exc.message) from None


class FakeCluster(FailsOnDemand[FakeRequest]):
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
        # Real apiservers pass sinceTime to the kubelet with whole-second precision.
        self.truncate_since_time = truncate_since_time
        self._cond = threading.Condition(threading.RLock())
        self._schedule = VirtualSchedule(self.clock, self._cond)
        self._store = FakeStore(self._cond, self._schedule)
        # A pod nobody scripted starts after 1 s and exits 0 a second later.
        self._kubelet = FakeKubelet(
            self._store,
            self._schedule,
            default_script if default_script is not None else PodScript.completes(),
        )
        self._jobs = FakeJobsController(self._store, self._schedule)
        self._failures: InjectedFailures[FakeRequest] = InjectedFailures(_OPERATIONS)
        self._requests: list[FakeRequest] = []
        self._deletions: list[tuple[str, str, str, str]] = []
        # `verb resource[/subresource]` pairs can_i denies (RBAC without a real authorizer)
        self.denied: set[str] = set()
        self._hosts: dict[str, FakeHost] = {}  # by pod uid: what exec runs in (userland.py)

    @property
    def default_script(self) -> PodScript:
        """The script of pods no script_pod() call matches."""
        return self._kubelet.default_script

    @default_script.setter
    def default_script(self, script: PodScript) -> None:
        self._kubelet.default_script = script

    # ----------------------------------------------------------------- scripting and injection

    def script_pod(self, target: str | PodMatcher, script: PodScript) -> None:
        """Script pods created from now on: by pod name, by Job name (its pods), or a predicate.

        The latest matching script wins. When `target` names an existing pod, its script starts now.
        """
        matcher = name_matcher(target) if isinstance(target, str) else target
        with self._cond:
            self._kubelet.script(matcher, script)
            if isinstance(target, str):
                for pod in self._store.of_kind("Pod"):
                    if pod["metadata"]["name"] == target and self._kubelet.has_started(pod):
                        self._kubelet.schedule_steps(pod, script.steps, self.clock.now())

    def act(self, pod: str, *script_steps: Step, namespace: str | None = None) -> None:
        """Apply kubelet steps to an existing pod, `at` counted from now (e.g. DeletePod())."""
        with self._cond:
            obj = self._store.find("Pod", pod, namespace)
            self._kubelet.schedule_steps(obj, script_steps, self.clock.now())
        self._schedule.catch_up()

    def _injected(self) -> InjectedFailures[FakeRequest]:
        """fail_next's queue (FailsOnDemand): operations are the Cluster methods."""
        return self._failures

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
            obj = self._store.find(kind.value, involved, namespace)
            return clone(self._store.add_event(obj, type, reason, message, component))

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, firing every scripted step that falls due."""
        self._schedule.advance(seconds)

    def schedule(self, delay: float, fn: Callable[[], object]) -> None:
        """Call `fn()` when virtual time reaches now + delay (outside the fake's lock)."""
        with self._cond:
            self._schedule.push(self.clock.now() + delay, None, fn)

    # ----------------------------------------------------------------- inspection

    @property
    def pods(self) -> builtins.list[JsonObject]:
        """Every stored pod (all namespaces), in creation order."""
        with self._cond:
            return clone(self._store.of_kind("Pod"))

    @property
    def jobs(self) -> builtins.list[JsonObject]:
        with self._cond:
            return clone(self._store.of_kind("Job"))

    @property
    def events(self) -> builtins.list[JsonObject]:
        with self._cond:
            return clone(self._store.events)

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
            return clone(self._store.find("Pod", name, namespace))

    def job(self, name: str, namespace: str | None = None) -> JsonObject:
        with self._cond:
            return clone(self._store.find("Job", name, namespace))

    def logs(self, pod: str, container: str | None = None, namespace: str | None = None) -> bytes:
        """Everything a container has written so far (no timestamps)."""
        with self._cond:
            obj = self._store.find("Pod", pod, namespace)
            runtime = self._kubelet.runtimes[obj["metadata"]["uid"]]
            return runtime.content(container or obj["spec"]["containers"][0]["name"])

    def pod_host(self, name: str, namespace: str | None = None) -> FakeHost:
        """The pod's userland for exec (files, command rules, scripted jobs): script it with
        `on_command` / `script_job`, inspect it with `read` / `mode`."""
        with self._cond:
            obj = self._store.find("Pod", name, namespace)
            return self._host_of(obj)

    def _host_of(self, pod: JsonObject) -> FakeHost:
        uid = pod["metadata"]["uid"]
        if uid not in self._hosts:
            self._hosts[uid] = FakeHost(clock=cast(FakeClock, self.clock))
        return self._hosts[uid]

    def __contains__(self, item: object) -> bool:
        """`"name" in cluster` for any Pod or Job; `(ResourceKind.JOB, "name") in cluster`."""
        with self._cond:
            names = self._store.names()
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], ResourceKind):
                return (item[0].value, item[1]) in names
            return any(n == item for _, n in names)

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
        with self._cond, _as_port_errors():
            body = copy.deepcopy(dict(manifest))  # user input: any JSON-like values
            result = clone(self._store.create(body, namespace, dry_run=dry_run))
        self._schedule.catch_up()
        return result

    def read(self, kind: ResourceKind, name: str, *, namespace: str) -> JsonObject | None:
        self._begin(FakeRequest("read", kind.value, namespace, name))
        with self._cond:
            obj = self._store.get(kind.value, namespace, name)
            return clone(obj) if obj is not None else None

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
            found = [o for o in self._store.of_kind(kind.value) if matches(o)]
            # etcd lists by key, i.e. by name within a namespace.
            found.sort(key=lambda o: o["metadata"]["name"])
            return clone(found)

    def list_page(
        self,
        kind: ResourceKind,
        *,
        namespace: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage:
        params = {
            "label_selector": label_selector,
            "field_selector": field_selector,
            "limit": limit,
            "continue": continue_token,
            "resource_version": resource_version,
            "resource_version_match": resource_version_match,
        }
        self._begin(FakeRequest("list_page", kind.value, namespace, None, params))
        matches = self._matcher(kind, namespace, label_selector, field_selector)
        with self._cond, _as_port_errors():
            options = parse_list_options(
                limit=str(limit) if limit is not None else None,
                continue_token=continue_token,
                resource_version=resource_version,
                resource_version_match=resource_version_match,
            )
            keyed = [
                (o["metadata"]["name"], o)
                for o in self._store.of_kind(kind.value)
                if o["metadata"]["namespace"] == namespace
            ]
            version = self._store.resource_version
            page = list_page(
                keyed,
                matches,
                options,
                resource_version=version,
                has_selector=bool(label_selector or field_selector),
            )
            items = [clone(dict(o)) for o in page.items]
            if options.from_cache:  # the watch cache is not sorted by key
                items.sort(key=lambda o: o["metadata"]["name"])
            return ListPage(items, str(options.continue_rv or version), page.continue_token or None)

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
            initial = sorted(
                (clone(o) for o in self._store.of_kind(kind.value) if matches(o)),
                key=lambda o: o["metadata"]["name"],
            )
            start = len(self._store.history)
        return watch_events(
            self._store,
            self._schedule,
            kind=kind.value,
            matches=matches,
            initial=initial,
            index=start,
            deadline=deadline,
            auto_advance=self.auto_advance,
        )

    def stream_logs(
        self,
        pod: str,
        *,
        namespace: str,
        container: str,
        since_time: str | None = None,
        timestamps: bool = True,
        follow: bool = True,
        tail_lines: int | None = None,
    ) -> FakeLogStream:
        params = {
            "container": container,
            "since_time": since_time,
            "timestamps": timestamps,
            "follow": follow,
            "tail_lines": tail_lines,
        }
        self._begin(FakeRequest("stream_logs", "Pod", namespace, pod, params))
        with self._cond, _as_port_errors():
            since_nanos = None
            if since_time is not None:
                since_nanos = log_rules.parse_since_time(since_time)
                if self.truncate_since_time:
                    since_nanos -= since_nanos % NANOS
            obj = self._store.get("Pod", namespace, pod)
            if obj is None:
                raise not_found(PODS, pod)
            log_rules.log_container(obj, container)
            if not log_rules.has_started(obj, container):
                raise log_rules.not_started(obj, container)
            runtime = self._kubelet.runtimes[obj["metadata"]["uid"]]
        return FakeLogStream(
            self,
            runtime,
            container=container,
            since_nanos=since_nanos,
            timestamps=timestamps,
            follow=follow,
            tail_lines=tail_lines,
        )

    def exec(
        self,
        pod: str,
        command: Sequence[str],
        *,
        namespace: str,
        container: str | None = None,
        stdin: ExecInput = None,
        on_stdout: OutputSink | None = None,
        on_stderr: OutputSink | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        argv = builtins.list(command)
        params = {"command": tuple(argv), "container": container}
        self._begin(FakeRequest("exec", "Pod", namespace, pod, params))
        if "create pods/exec" in self.denied:
            raise error_for_status(
                403, f'pods "{pod}" is forbidden: cannot create resource "pods/exec"'
            )
        with self._cond:
            with _as_port_errors():
                obj = self._store.get("Pod", namespace, pod)
                if obj is None:
                    raise not_found(PODS, pod)
            try:
                name = log_rules.log_container(obj, container)
            except StatusError as exc:
                if container is None:  # no name given and more than one container: Invalid
                    raise error_for_status(exc.code, exc.message) from None
                raise ContainerNotRunning(exc.message, status=exc.code) from None
            _check_exec_target(obj, name)
            host = self._host_of(obj)
        data = stdin if isinstance(stdin, bytes) else b"".join(stdin or ())
        outcome = run_in_host(host, argv, data)
        duration = outcome.duration
        if timeout is not None and duration > timeout:
            self.advance(timeout)
            raise ExecTimedOut(f"exec in {namespace}/{pod} timed out after {timeout:g}s")
        if duration == float("inf"):
            raise PortError(f"exec in {namespace}/{pod} waits for stdin that never comes")
        if duration > 0:
            self.advance(duration)
        if outcome.error is not None:
            raise outcome.error
        return ExecResult(
            outcome.exit_code,
            _deliver(outcome.stdout, on_stdout),
            _deliver(outcome.stderr, on_stderr),
        )

    def can_i(
        self, verb: str, resource: str, *, namespace: str, group: str = "", subresource: str = ""
    ) -> bool | None:
        full = f"{resource}/{subresource}" if subresource else resource
        return f"{verb} {full}" not in self.denied

    def list_events(
        self, *, namespace: str, involved_name: str, involved_uid: str | None = None
    ) -> builtins.list[JsonObject]:
        params = {"involved_uid": involved_uid}
        self._begin(FakeRequest("list_events", "Event", namespace, involved_name, params))
        selector = f"involvedObject.name={involved_name}"
        if involved_uid:
            selector += f",involvedObject.uid={involved_uid}"
        matches = field_matcher(selector, EVENTS)
        with self._cond:
            return clone(
                [
                    e
                    for e in self._store.events
                    if e["metadata"]["namespace"] == namespace and matches(e)
                ]
            )

    def patch(
        self, kind: ResourceKind, name: str, patch: Mapping[str, Any], *, namespace: str
    ) -> JsonObject:
        self._begin(FakeRequest("patch", kind.value, namespace, name, {"patch": patch}))
        with self._cond, _as_port_errors():
            obj = self._store.get(kind.value, namespace, name)
            if obj is None:
                raise not_found(BY_KIND[kind.value], name)
            body = copy.deepcopy(dict(patch))  # user input: any JSON-like values
            result = clone(self._store.update(obj, lambda o: merge_patch_into(o, body)))
        self._schedule.catch_up()
        return result

    def watch_events(
        self,
        *,
        namespace: str,
        involved_name: str,
        involved_uid: str | None = None,
        timeout: float,
    ) -> Iterator[WatchEvent]:
        params = {"involved_uid": involved_uid, "timeout": timeout}
        self._begin(FakeRequest("watch_events", "Event", namespace, involved_name, params))
        selector = f"involvedObject.name={involved_name}"
        if involved_uid:
            selector += f",involvedObject.uid={involved_uid}"
        selected = field_matcher(selector, EVENTS)

        def matches(event: Mapping[str, Any]) -> bool:
            return event["metadata"]["namespace"] == namespace and selected(event)

        with self._cond:
            deadline = self.clock.now() + timeout
            initial = [clone(e) for e in self._store.events if matches(e)]
            start = len(self._store.history)
        return watch_events(
            self._store,
            self._schedule,
            kind="Event",
            matches=matches,
            initial=initial,
            index=start,
            deadline=deadline,
            auto_advance=self.auto_advance,
        )

    def replace(
        self, kind: ResourceKind, name: str, obj: Mapping[str, Any], *, namespace: str
    ) -> JsonObject:
        self._begin(FakeRequest("replace", kind.value, namespace, name, {"body": obj}))
        with self._cond, _as_port_errors():
            current = self._store.get(kind.value, namespace, name)
            if current is None:
                raise not_found(BY_KIND[kind.value], name)
            body = copy.deepcopy(dict(obj))
            validate(BY_KIND[kind.value], body)
            result = clone(self._store.replace(current, body))
        self._schedule.catch_up()
        return result

    def delete(
        self, kind: ResourceKind, name: str, *, namespace: str, propagation: str = "Background"
    ) -> bool:
        params = {"propagation": propagation}
        self._begin(FakeRequest("delete", kind.value, namespace, name, params))
        with _as_port_errors():
            garbage.check_policy(propagation)
        with self._cond:
            obj = self._store.get(kind.value, namespace, name)
            if obj is None:
                return False
            self._deletions.append((kind.value, namespace, name, propagation))
            stamp = format_rfc3339(seconds_to_nanos(self.clock.now()))
            garbage.delete_with_policy(self._store, obj, propagation, stamp)
        self._schedule.catch_up()
        return True

    # ----------------------------------------------------------------- internals

    def _begin(self, request: FakeRequest) -> None:
        """Log the call, fire steps that fell due (the clock may have moved), inject failures."""
        self._schedule.catch_up()
        with self._cond:
            self._requests.append(request)
            self._failures.raise_if_due(request)

    def _matcher(
        self,
        kind: ResourceKind,
        namespace: str,
        label_selector: str | None,
        field_selector: str | None,
    ) -> Callable[[Mapping[str, Any]], bool]:
        with _as_port_errors():
            selected = selector_matcher(BY_KIND[kind.value], label_selector, field_selector)

        def matches(obj: Mapping[str, Any]) -> bool:
            return obj["metadata"]["namespace"] == namespace and selected(obj)

        return matches

    def _close_stream(self, stream: FakeLogStream) -> None:
        with self._cond:
            stream.closed = True
            self._cond.notify_all()

    def _read_log(self, stream: FakeLogStream, runtime: PodLogs) -> Iterator[bytes]:
        return read_log(
            stream,
            runtime,
            cond=self._cond,
            schedule=self._schedule,
            auto_advance=self.auto_advance,
        )


def _check_exec_target(pod: JsonObject, container: str) -> None:
    """The 400s the apiserver and kubelet answer an exec into a container that is not running
    (pkg/registry/core/pod/strategy.go ExecLocation; the kubelet's `container not found`)."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise ContainerNotRunning(
            f"cannot exec into a container in a completed pod; current phase is {phase}",
            status=400,
        )
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    state = next((s.get("state") or {} for s in statuses if s["name"] == container), {})
    if "running" not in state:
        raise ContainerNotRunning(
            f'unable to upgrade connection: container not found ("{container}")', status=400
        )


def _deliver(data: bytes, sink: OutputSink | None) -> bytes:
    """Hand `data` to the sink in stream-sized pieces; collect it when there is no sink."""
    if sink is None:
        return data
    for start in range(0, len(data), _EXEC_CHUNK):
        sink(data[start : start + _EXEC_CHUNK])
    return b""

"""FakeCluster's kubelet: moves each pod through its PodScript in virtual time, writing the
statuses, Events and log records a real kubelet would (the shapes are kube_semantics')."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Mapping
from typing import Any

from pegboard.adapters.kube_semantics import podstatus
from pegboard.adapters.kube_semantics.events import scheduled_message
from pegboard.adapters.kube_semantics.kubetime import (
    format_rfc3339,
    format_rfc3339_nano,
    parse_rfc3339,
    seconds_to_nanos,
)
from pegboard.domain.ports.cluster import JsonObject

from . import script as steps
from .logs import PodLogs
from .script import PodScript, Step
from .store import NODE_NAME, FakeStore, fake_hex
from .virtual_time import VirtualSchedule

PodMatcher = Callable[[Mapping[str, Any]], bool]
HOST_IP = "10.0.0.1"
POD_IP = "10.244.0.10"


def name_matcher(name: str) -> PodMatcher:
    """Pods named `name`, or the pods of the Job named `name`."""

    def matches(pod: Mapping[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        return meta.get("name") == name or (meta.get("labels") or {}).get("job-name") == name

    return matches


class FakeKubelet:
    """Starts every stored pod on its script; keeps each pod's logs."""

    def __init__(self, store: FakeStore, schedule: VirtualSchedule, default: PodScript) -> None:
        self.default_script = default
        self.runtimes: dict[str, PodLogs] = {}
        self._store = store
        self._schedule = schedule
        self._scripts: builtins.list[tuple[PodMatcher, PodScript]] = []
        store.subscribe(self._on_change)

    # ----------------------------------------------------------------- scripting

    def script(self, matcher: PodMatcher, script: PodScript) -> None:
        """Pods created from now on that match follow `script` (the latest match wins)."""
        self._scripts.insert(0, (matcher, script))

    def schedule_steps(self, pod: JsonObject, script_steps: tuple[Step, ...], base: float) -> None:
        """Apply `script_steps` to a stored pod, each `at` counted from `base`."""
        uid = pod["metadata"]["uid"]
        for step in sorted(script_steps, key=lambda s: s.at):  # stable: script order at equal times
            if isinstance(step, steps.Call):
                self._schedule.push(base + step.at, None, step.fn)
            else:
                apply = functools.partial(self._apply_step, step=step)
                self._schedule.push(base + step.at, functools.partial(self._on_pod, uid, apply))

    def has_started(self, pod: JsonObject) -> bool:
        return pod["metadata"]["uid"] in self.runtimes

    def _script_for(self, pod: JsonObject) -> PodScript:
        for matcher, script in self._scripts:
            if matcher(pod):
                return script
        return self.default_script

    # ----------------------------------------------------------------- reacting to the store

    def _on_change(
        self, change: str, obj: JsonObject, previous: JsonObject | None, at: float
    ) -> None:
        if obj["kind"] != "Pod":
            return
        meta = obj["metadata"]
        if change == "ADDED":
            names = [c["name"] for c in obj["spec"]["containers"]]
            self.runtimes[meta["uid"]] = PodLogs(
                meta["uid"], meta["namespace"], meta["name"], {n: [] for n in names}
            )
            script = self._script_for(obj)
            if not any(isinstance(s, steps.Unschedulable) for s in script.steps):
                self._schedule.push(at, functools.partial(self._on_pod, meta["uid"], self._bind))
            self.schedule_steps(obj, script.steps, at)
        elif change == "DELETED" and meta["uid"] in self.runtimes:
            self.runtimes[meta["uid"]].gone = True

    def _on_pod(self, uid: str, change: Callable[[JsonObject, float], None], at: float) -> None:
        pod = self._store.by_uid(uid)
        if pod is not None and pod["kind"] == "Pod":
            change(pod, at)

    def _event(self, pod: JsonObject, type_: str, reason: str, message: str) -> None:
        self._store.add_event(pod, type_, reason, message, "kubelet")

    # ----------------------------------------------------------------- steps

    def _bind(self, pod: JsonObject, at: float) -> None:
        stamp = format_rfc3339(seconds_to_nanos(at))
        self._store.update(
            pod, lambda p: podstatus.mark_scheduled(p, node=NODE_NAME, host_ip=HOST_IP, stamp=stamp)
        )
        message = scheduled_message(pod, NODE_NAME)
        self._store.add_event(pod, "Normal", "Scheduled", message, "default-scheduler")

    def _apply_step(self, pod: JsonObject, at: float, *, step: Step) -> None:
        stamp = format_rfc3339(seconds_to_nanos(at))
        runtime = self.runtimes[pod["metadata"]["uid"]]
        if isinstance(step, steps.Log | steps.DropLogStream | steps.EndLogStream):
            self._append_log(runtime, pod, step, at)
        elif isinstance(step, steps.Event):
            self._store.add_event(pod, step.type, step.reason, step.message, step.component)
        elif isinstance(step, steps.DeletePod):
            self._store.remove(pod)
        elif isinstance(step, steps.Unschedulable):
            message = step.message
            self._store.update(
                pod, lambda p: podstatus.mark_unschedulable(p, message=message, stamp=stamp)
            )
            self._store.add_event(pod, "Warning", "FailedScheduling", message, "default-scheduler")
        elif isinstance(step, steps.Placed):
            self._bind(pod, at)
        elif isinstance(step, steps.Evict):
            for name in runtime.logs:
                runtime.flush(name, seconds_to_nanos(at))
            runtime.gone = True
            reason, message = step.reason, step.message
            self._store.update(
                pod, lambda p: podstatus.evict(p, reason=reason, message=message, stamp=stamp)
            )
            self._event(pod, "Warning", reason, message)
        else:
            self._container_step(pod, runtime, step, at)

    def _append_log(
        self,
        runtime: PodLogs,
        pod: JsonObject,
        step: steps.Log | steps.DropLogStream | steps.EndLogStream,
        at: float,
    ) -> None:
        names = (
            [step.container] if step.container else [c["name"] for c in pod["spec"]["containers"]]
        )
        nanos = seconds_to_nanos(at)
        stamp = format_rfc3339_nano(nanos)
        if isinstance(step, steps.Log) and step.timestamp is not None:
            stamp, nanos = step.timestamp, parse_rfc3339(step.timestamp)
        for name in names:
            if isinstance(step, steps.Log):
                runtime.write(name, step.data, nanos, stamp, partial=step.partial)
            else:
                marker = "drop" if isinstance(step, steps.DropLogStream) else "end"
                runtime.mark(name, marker, nanos, stamp)
        self._store.cond.notify_all()

    def _container_step(self, pod: JsonObject, runtime: PodLogs, step: Step, at: float) -> None:
        stamp = format_rfc3339(seconds_to_nanos(at))
        if isinstance(step, steps.InitWaiting | steps.Waiting):
            self._wait(pod, step, stamp)
        elif isinstance(step, steps.Running):
            self._run(pod, step, stamp)
        elif isinstance(step, steps.Exit):
            self._exit(pod, runtime, step, at)

    def _wait(self, pod: JsonObject, step: steps.InitWaiting | steps.Waiting, stamp: str) -> None:
        key = (
            "initContainerStatuses" if isinstance(step, steps.InitWaiting) else "containerStatuses"
        )

        def wait(p: JsonObject) -> None:
            for status in _targets(p, step.container, key):
                waiting = podstatus.waiting_status(status, step.reason, step.message)
                status.update(state=waiting["state"], ready=False, started=False)
            if key == "containerStatuses":
                podstatus.settle_phase(p, stamp, pod_ip=POD_IP)

        self._store.update(pod, wait)
        if step.reason not in podstatus.WAITING_NOT_ERRORS:
            self._event(pod, "Warning", "Failed", step.message or step.reason)

    def _run(self, pod: JsonObject, step: steps.Running, stamp: str) -> None:
        started: builtins.list[str] = []

        def run(p: JsonObject) -> None:
            statuses = p["status"]
            for index, init in enumerate(statuses.get("initContainerStatuses") or ()):
                if "terminated" not in init["state"]:
                    statuses["initContainerStatuses"][index] = podstatus.terminated_status(
                        init,
                        container_id=_container_id(p, init["name"]),
                        exit_code=0,
                        reason="Completed",
                        started_at=stamp,
                        finished_at=stamp,
                    )
            for status in _targets(p, step.container, "containerStatuses"):
                status.update(
                    podstatus.running_status(
                        status, container_id=_container_id(p, status["name"]), started_at=stamp
                    )
                )
                started.append(status["name"])
            podstatus.settle_phase(p, stamp, pod_ip=POD_IP)

        self._store.update(pod, run)
        for name in started:
            self._event(pod, "Normal", "Started", f"Started container {name}")

    def _exit(self, pod: JsonObject, runtime: PodLogs, step: steps.Exit, at: float) -> None:
        stamp = format_rfc3339(seconds_to_nanos(at))
        reason = step.reason or podstatus.exit_reason(step.code)

        def terminate(p: JsonObject) -> None:
            for status in _targets(p, step.container, "containerStatuses"):
                began = status["state"].get("running", {}).get("startedAt", stamp)
                status.update(
                    podstatus.terminated_status(
                        status,
                        container_id=status.get("containerID", ""),
                        exit_code=step.code,
                        reason=reason,
                        started_at=began,
                        finished_at=stamp,
                        message=step.message,
                    )
                )
                runtime.flush(status["name"], seconds_to_nanos(at))
                runtime.finished.add(status["name"])
            podstatus.settle_phase(p, stamp, pod_ip=POD_IP)

        self._store.update(pod, terminate)


def _targets(pod: JsonObject, container: str | None, key: str) -> builtins.list[JsonObject]:
    statuses: builtins.list[JsonObject] = pod["status"].get(key, [])
    return [s for s in statuses if container is None or s["name"] == container]


def _container_id(pod: JsonObject, container: str) -> str:
    return "containerd://" + fake_hex(pod["metadata"]["uid"] + container, 64)

"""Nodes and the scheduler: declared nodes (labels, capacity, taints) decide where a pod binds.

Without declared nodes the sandbox keeps its one node that fits every pod (`sandbox-node`,
listed by GET /api/v1/nodes) and schedules nothing. With nodes, each pod goes through the
filters of kube_semantics.scheduling against what the node's non-terminal pods already request;
when no node fits it stays Pending with PodScheduled=False (Unschedulable) and a FailedScheduling
Warning from default-scheduler, and is tried again whenever a pod ends or is deleted or a node
changes (the scheduling queue's move on AssignedPodDelete / NodeAdd / NodeUpdate events,
pkg/scheduler/internal/queue). The placement is LeastAllocated-like: the feasible node with the
most room left for what the pod asks, then by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from pegboard.adapters.kube_semantics.resources import NODES, PERSISTENT_VOLUME_CLAIMS, PODS
from pegboard.adapters.kube_semantics.scheduling import (
    NOT_HELPFUL,
    fit_error_message,
    node_reasons,
    pod_requests,
    quantity,
)
from pegboard.domain.errors import UsageError

from .events import NODE_NAME
from .store import Change, JsonObject, Store

_TERMINAL = ("Succeeded", "Failed")
# A declared node's capacity where it says nothing (a big machine: what is not declared never
# constrains a pod).
_DEFAULT_CAPACITY = {"cpu": "64", "memory": "512Gi", "ephemeral-storage": "2Ti", "pods": "110"}
_DEFAULT_NODE = {"name": NODE_NAME, "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "10000"}}
_SHORT_KEYS = {"name", "labels", "capacity", "allocatable", "taints", "unschedulable"}


def node_object(declared: Mapping[str, Any]) -> JsonObject:
    """A core/v1 Node from a Node document or the short form {name, labels, capacity,
    allocatable (default: capacity), taints, unschedulable}; UsageError naming what is wrong."""
    if declared.get("kind") not in (None, "Node"):
        raise UsageError(f"node {declared!r}: kind must be Node")
    if "metadata" in declared or "kind" in declared:
        meta = declared.get("metadata") or {}
        spec = declared.get("spec") or {}
        status = declared.get("status") or {}
        short: dict[str, Any] = {
            "name": meta.get("name"),
            "labels": meta.get("labels") or {},
            "capacity": status.get("capacity"),
            "allocatable": status.get("allocatable"),
            "taints": spec.get("taints") or [],
            "unschedulable": bool(spec.get("unschedulable")),
        }
    else:
        unknown = sorted(set(declared) - _SHORT_KEYS)
        if unknown:
            raise UsageError(f"node {declared.get('name')!r}: unknown key {unknown[0]!r}")
        short = dict(declared)
    name = str(short.get("name") or "")
    if not name:
        raise UsageError(f"node {declared!r}: a name is required")
    capacity = {
        **_DEFAULT_CAPACITY,
        **{k: str(v) for k, v in (short.get("capacity") or {}).items()},
    }
    allocatable = {**capacity, **{k: str(v) for k, v in (short.get("allocatable") or {}).items()}}
    for key, value in (*capacity.items(), *allocatable.items()):
        if quantity(value) < 0 or (quantity(value) == 0 and str(value).strip() not in ("0", "0m")):
            raise UsageError(f"node {name!r}: {key}: {value!r} is not a resource quantity")
    taints = []
    for taint in short.get("taints") or ():
        if isinstance(taint, str):  # kubectl taint's syntax: key[=value]:Effect
            key_value, _, effect = taint.rpartition(":")
            key, _, value = key_value.partition("=")
            taint = {"key": key, "value": value, "effect": effect}
        if taint.get("effect") not in (
            "NoSchedule",
            "PreferNoSchedule",
            "NoExecute",
        ) or not taint.get("key"):
            raise UsageError(
                f"node {name!r}: taint {taint!r}: needs a key and an effect of NoSchedule, PreferNoSchedule or NoExecute"
            )
        taints.append(
            {k: v for k, v in taint.items() if k in ("key", "value", "effect") and v != ""}
        )
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **{str(k): str(v) for k, v in (short.get("labels") or {}).items()},
    }
    spec_out: JsonObject = {}
    if taints:
        spec_out["taints"] = taints
    if short.get("unschedulable"):
        spec_out["unschedulable"] = True
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": labels, "annotations": {}},
        "spec": spec_out,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [],  # filled when stored (timestamps)
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "0" * 32,
                "systemUUID": "00000000-0000-0000-0000-000000000000",
                "bootID": "00000000-0000-0000-0000-000000000000",
                "kernelVersion": "6.1.0",
                "osImage": "pegboard sandbox",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.31.0",
                "kubeProxyVersion": "v1.31.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def _ready_conditions(stamp: str) -> list[JsonObject]:
    def condition(type_: str, status: str, reason: str, message: str) -> JsonObject:
        return {
            "type": type_,
            "status": status,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "reason": reason,
            "message": message,
        }

    return [
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]


class Scheduler:
    """Binds pods to declared nodes; `declared` is False for the default one-node sandbox."""

    def __init__(self, store: Store, now: Callable[[], str]) -> None:
        self._store = store
        self._now = now
        self._changed = threading.Condition(threading.RLock())
        self._generation = 0
        self.declared = False
        store.subscribe(self._on_change)

    def add_nodes(self, declared: Iterable[Mapping[str, Any]]) -> list[JsonObject]:
        added = []
        for item in declared:
            node = node_object(item)
            node["status"]["conditions"] = _ready_conditions(self._now())
            if self._store.find(NODES, "", node["metadata"]["name"]) is not None:
                raise UsageError(f"node {node['metadata']['name']!r} is declared twice")
            self.declared = True
            stored = self._store.prepare_new(NODES, node, "")
            del stored["metadata"]["namespace"]  # cluster-scoped
            added.append(self._store.create(NODES, stored))
        return added

    def remove_node(self, name: str) -> None:
        self._store.remove(NODES, "", name)

    def nodes(self) -> list[JsonObject]:
        if not self.declared:
            return [self.default_node()]
        return self._store.list(NODES, None)[0]

    def default_node(self) -> JsonObject:
        node = node_object(_DEFAULT_NODE)
        node["metadata"].update(uid="00000000-0000-0000-0000-0000000000aa", resourceVersion="1",
                                creationTimestamp="2026-01-01T00:00:00Z")  # fmt: skip
        node["status"]["conditions"] = _ready_conditions("2026-01-01T00:00:00Z")
        return node

    def _claim_problem(self, pod: JsonObject) -> str | None:
        return _claim_problem_of(self._store, pod)

    # -- waking pods that wait --------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        freed = change.resource in (NODES, PERSISTENT_VOLUME_CLAIMS) or (
            change.resource is PODS
            and (
                change.type == "DELETED"
                or (
                    change.object.get("status", {}).get("phase") in _TERMINAL
                    and (change.previous or {}).get("status", {}).get("phase") not in _TERMINAL
                )
            )
        )
        if freed:
            with self._changed:
                self._generation += 1
                self._changed.notify_all()

    @property
    def generation(self) -> int:
        with self._changed:
            return self._generation

    def wait(self, generation: int, timeout: float) -> None:
        """Until something that may free room happens after `generation`, or `timeout`."""
        with self._changed:
            self._changed.wait_for(lambda: self._generation != generation, timeout)

    # -- one scheduling attempt -------------------------------------------------------------------

    def schedule(self, pod: JsonObject, bind: Callable[[str], object]) -> str | None:
        """Bind the pod to the best node that fits (`bind(node_name)` stores it, under the
        scheduler's lock so two pods never take the same room); the FailedScheduling message
        when none does."""
        with self._changed:
            nodes = self._store.list(NODES, None)[0] if self.declared else [self.default_node()]
            if not nodes:
                return "no nodes available to schedule pods"  # schedule_one.go ErrNoNodesAvailable
            claim_problem = self._claim_problem(pod)
            if claim_problem is not None:
                # volumebinding's PreFilter: one message for all nodes (FitError's PreFilterMsg)
                return (
                    f"0/{len(nodes)} nodes are available: {claim_problem}. preemption: "
                    f"0/{len(nodes)} nodes are available: {len(nodes)} {NOT_HELPFUL}."
                )
            if not self.declared:  # the one node fits every pod
                bind(NODE_NAME)
                return None
            uid = pod["metadata"]["uid"]
            used: dict[str, dict[str, Decimal]] = {}
            counts: dict[str, int] = {}
            for other in self._store.list(PODS, None)[0]:
                node_name = (other.get("spec") or {}).get("nodeName")
                if (
                    not node_name
                    or other["metadata"]["uid"] == uid
                    or (other.get("status") or {}).get("phase") in _TERMINAL
                ):
                    continue
                totals = used.setdefault(node_name, {})
                for name, value in pod_requests(other).items():
                    totals[name] = totals.get(name, Decimal(0)) + value
                counts[node_name] = counts.get(node_name, 0) + 1
            feasible: list[tuple[Decimal, str]] = []
            failures: list[tuple[list[str], bool]] = []
            wanted = pod_requests(pod)
            for node in nodes:
                name = node["metadata"]["name"]
                reasons, resolvable = node_reasons(
                    pod, node, used.get(name, {}), counts.get(name, 0)
                )
                if reasons:
                    failures.append((reasons, resolvable))
                    continue
                feasible.append((_room_left(node, used.get(name, {}), wanted), name))
            if not feasible:
                return fit_error_message(len(nodes), failures)
            best = min(feasible, key=lambda item: (-item[0], item[1]))[1]
            bind(best)
            return None


def _claim_problem_of(store: Store, pod: JsonObject) -> str | None:
    """plugins/volumebinding PreFilter: a claim the pod names must exist, not be being deleted,
    and be bound (ours always are): its lister's NotFound error text, or its own."""
    namespace = pod["metadata"]["namespace"]
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if not claim:
            continue
        name = str(claim.get("claimName") or "")
        found = store.find(PERSISTENT_VOLUME_CLAIMS, namespace, name)
        if found is None:
            return f'persistentvolumeclaim "{name}" not found'
        if found["metadata"].get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if (found.get("status") or {}).get("phase") != "Bound":
            return "pod has unbound immediate PersistentVolumeClaims"
    return None


def _room_left(
    node: JsonObject, used: Mapping[str, Decimal], wanted: Mapping[str, Decimal]
) -> Decimal:
    """The mean free fraction of cpu and memory after the pod (noderesources LeastAllocated)."""
    allocatable = node["status"]["allocatable"]
    fractions = []
    for name in ("cpu", "memory"):
        total = quantity(allocatable.get(name, 0))
        if total > 0:
            left = total - used.get(name, Decimal(0)) - wanted.get(name, Decimal(0))
            fractions.append(left / total)
    return sum(fractions, Decimal(0)) / len(fractions) if fractions else Decimal(0)

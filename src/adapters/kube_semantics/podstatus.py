"""Pod and container status as the scheduler and kubelet write them, schema-complete for the
official client's models (a containerStatus always has name, image, imageID, ready and
restartCount; a terminated state always has exitCode; conditions always have type and status)."""

from __future__ import annotations

import hashlib
from typing import Any

JsonObject = dict[str, Any]

TERMINAL_PHASES = ("Succeeded", "Failed")
# Waiting reasons that are normal progress, not worth a Warning event.
WAITING_NOT_ERRORS = frozenset({"ContainerCreating", "PodInitializing"})


def image_id(image: str) -> str:
    """A deterministic, fully qualified image reference with a digest, like containerd reports."""
    digest = hashlib.sha256(image.encode()).hexdigest()
    name = (
        image.split("@", 1)[0].rsplit(":", 1)[0] if "/" not in image.rsplit(":", 1)[-1] else image
    )
    if "/" not in name:
        name = f"library/{name}"
    if "." not in name.split("/", 1)[0]:
        name = f"docker.io/{name}"
    return f"{name}@sha256:{digest}"


def waiting_status(container: JsonObject, reason: str, message: str | None = None) -> JsonObject:
    waiting: JsonObject = {"reason": reason}
    if message:
        waiting["message"] = message
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": waiting},
        "lastState": {},
    }


def _started_status(
    container: JsonObject, *, container_id: str, state: JsonObject, running: bool
) -> JsonObject:
    image = container.get("image", "")
    return {
        "name": container["name"],
        "image": image,
        "imageID": image_id(image),
        "containerID": container_id,
        "ready": running,
        "started": running,
        "restartCount": 0,
        "state": state,
        "lastState": {},
    }


def running_status(container: JsonObject, *, container_id: str, started_at: str) -> JsonObject:
    state = {"running": {"startedAt": started_at}}
    return _started_status(container, container_id=container_id, state=state, running=True)


def terminated_status(
    container: JsonObject,
    *,
    container_id: str,
    exit_code: int,
    reason: str,
    started_at: str | None,
    finished_at: str,
    message: str = "",
) -> JsonObject:
    terminated: JsonObject = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "containerID": container_id,
    }
    if message:
        terminated["message"] = message
    state = {"terminated": terminated}
    return _started_status(container, container_id=container_id, state=state, running=False)


def exit_reason(exit_code: int) -> str:
    return "Completed" if exit_code == 0 else "Error"


def set_condition(
    status: JsonObject,
    type_: str,
    value: bool,
    stamp: str,
    reason: str | None = None,
    message: str | None = None,
) -> None:
    """Set one pod condition; lastTransitionTime moves only when the status flips."""
    text = "True" if value else "False"
    conditions: list[JsonObject] = status.setdefault("conditions", [])
    for condition in conditions:
        if condition["type"] == type_:
            if condition["status"] != text:
                condition["lastTransitionTime"] = stamp
            condition["status"] = text
            break
    else:
        condition = {
            "type": type_,
            "status": text,
            "lastProbeTime": None,
            "lastTransitionTime": stamp,
        }
        conditions.append(condition)
    for key, detail in (("reason", reason), ("message", message)):
        if detail:
            condition[key] = detail
        else:
            condition.pop(key, None)


def _names(containers: list[JsonObject]) -> str:
    return "[" + " ".join(c["name"] for c in containers) + "]"


def mark_scheduled(pod: JsonObject, *, node: str, host_ip: str, stamp: str) -> None:
    """Bound to a node: conditions, startTime and every container waiting to be created."""
    spec, status = pod["spec"], pod["status"]
    init = spec.get("initContainers") or []
    app = spec["containers"]
    spec["nodeName"] = node
    status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}], startTime=stamp)
    set_condition(status, "PodScheduled", True, stamp)
    if init:
        set_condition(
            status,
            "Initialized",
            False,
            stamp,
            "ContainersNotInitialized",
            f"containers with incomplete status: {_names(init)}",
        )
        status["initContainerStatuses"] = [waiting_status(c, "PodInitializing") for c in init]
    else:
        set_condition(status, "Initialized", True, stamp)
    unready = f"containers with unready status: {_names(app)}"
    set_condition(status, "Ready", False, stamp, "ContainersNotReady", unready)
    set_condition(status, "ContainersReady", False, stamp, "ContainersNotReady", unready)
    waiting = "PodInitializing" if init else "ContainerCreating"
    status["containerStatuses"] = [waiting_status(c, waiting) for c in app]


def mark_unschedulable(pod: JsonObject, *, message: str, stamp: str) -> None:
    set_condition(pod["status"], "PodScheduled", False, stamp, "Unschedulable", message)


def phase_from_containers(status: JsonObject) -> str | None:
    """restartPolicy Never: all terminated -> Succeeded/Failed, any started -> Running."""
    states = [cs["state"] for cs in status.get("containerStatuses") or ()]
    if not states:
        return None
    if all("terminated" in s for s in states):
        ok = all(s["terminated"]["exitCode"] == 0 for s in states)
        return "Succeeded" if ok else "Failed"
    if any("running" in s or "terminated" in s for s in states):
        return "Running"
    return "Pending"


def set_phase(pod: JsonObject, phase: str, stamp: str, *, pod_ip: str | None = None) -> None:
    """Move to `phase` with the conditions the kubelet reports for it."""
    status = pod["status"]
    status["phase"] = phase
    if pod_ip is not None and phase != "Pending":
        status.setdefault("podIP", pod_ip)
        status.setdefault("podIPs", [{"ip": pod_ip}])
    if phase in TERMINAL_PHASES:
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        set_condition(status, "PodReadyToStartContainers", False, stamp)
        set_condition(status, "Ready", False, stamp, reason)
        set_condition(status, "ContainersReady", False, stamp, reason)
        return
    if phase != "Running":
        return
    set_condition(status, "PodReadyToStartContainers", True, stamp)
    set_condition(status, "Initialized", True, stamp)
    statuses = status.get("containerStatuses") or []
    unready = [s for s in statuses if "running" not in s["state"]]
    if unready:
        message = f"containers with unready status: {_names(unready)}"
        set_condition(status, "Ready", False, stamp, "ContainersNotReady", message)
        set_condition(status, "ContainersReady", False, stamp, "ContainersNotReady", message)
    else:
        set_condition(status, "Ready", True, stamp)
        set_condition(status, "ContainersReady", True, stamp)


def settle_phase(pod: JsonObject, stamp: str, *, pod_ip: str | None = None) -> None:
    """Recompute the phase from the container states (a terminal phase never changes)."""
    if pod["status"].get("phase") in TERMINAL_PHASES:
        return
    phase = phase_from_containers(pod["status"])
    if phase is not None:
        set_phase(pod, phase, stamp, pod_ip=pod_ip)


def evict(pod: JsonObject, *, reason: str, message: str, stamp: str) -> None:
    """The kubelet gave up on the pod: Failed with a reason; containers keep their last state."""
    pod["status"].update(reason=reason, message=message)
    set_phase(pod, "Failed", stamp)


def container_group(pod: JsonObject, name: str) -> str:
    """`initContainers` or `containers`: where a container of this pod is declared."""
    init = pod["spec"].get("initContainers") or ()
    return "initContainers" if any(c["name"] == name for c in init) else "containers"


def container_field_path(pod: JsonObject, name: str) -> str:
    """The involvedObject.fieldPath of an event about one container."""
    return f"spec.{container_group(pod, name)}{{{name}}}"

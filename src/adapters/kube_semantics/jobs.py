"""The Jobs controller's rules: the pod it makes for a Job, how it counts that pod's end, and
when the Job is Complete or Failed. Both emulators run these on their own clocks and threads."""

from __future__ import annotations

import copy
import enum
from typing import Any

from .podstatus import TERMINAL_PHASES

JsonObject = dict[str, Any]

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
_BACKOFF_MESSAGE = "Job has reached the specified backoff limit"
_COMPLETIONS_MESSAGE = "Reached expected number of succeeded pods"


class JobStep(enum.Enum):
    """What the controller does after counting a pod's end."""

    RETRY = "retry"  # make another pod
    COMPLETE = "complete"
    FAILED = "failed"
    WAIT = "wait"  # more completions to go, pods still running


def is_finished(job: JsonObject) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


def is_being_deleted(obj: JsonObject) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def owner_job_uid(pod: JsonObject) -> str | None:
    """The uid of the Job controlling this pod, if any."""
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("kind") == "Job" and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def pod_for_job(job: JsonObject) -> JsonObject:
    """The pod manifest the controller creates: generateName <job>-, the template's labels and
    annotations, a controller ownerReference and the job-tracking finalizer."""
    meta = job["metadata"]
    template = job["spec"]["template"]
    template_meta = template.get("metadata") or {}
    pod_meta: JsonObject = {
        "generateName": f"{meta['name']}-",
        "labels": dict(template_meta.get("labels") or {}),
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "finalizers": [TRACKING_FINALIZER],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    spec = copy.deepcopy(template["spec"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def count_started(job: JsonObject, stamp: str) -> None:
    """A pod was created for the Job."""
    status = job.setdefault("status", {})
    status.setdefault("startTime", stamp)
    status["active"] = int(status.get("active", 0)) + 1
    status.setdefault("ready", 0)
    status.setdefault("terminating", 0)


def pod_outcome(change: str, pod: JsonObject, previous: JsonObject | None) -> bool | None:
    """Whether this change ends a pod for its Job: True succeeded, False failed, None not yet.
    A pod reaching a terminal phase counts once; one deleted before that counts as failed."""
    phase: str | None = (pod.get("status") or {}).get("phase")
    before: str | None = ((previous or {}).get("status") or {}).get("phase")
    if change == "MODIFIED" and phase in TERMINAL_PHASES and before not in TERMINAL_PHASES:
        return phase == "Succeeded"
    if change == "DELETED" and phase not in TERMINAL_PHASES:
        return False
    return None


def _condition(type_: str, reason: str, message: str, stamp: str) -> JsonObject:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
    }


def count_finished(job: JsonObject, *, succeeded: bool, stamp: str) -> JobStep:
    """Count one pod's end into the Job's status; set Complete or Failed when that decides it."""
    spec, status = job["spec"], job.setdefault("status", {})
    active = max(0, int(status.get("active", 0)) - 1)
    if active:
        status["active"] = active
    else:
        status.pop("active", None)  # omitted when zero, as the apiserver serialises it
    key = "succeeded" if succeeded else "failed"
    status[key] = int(status.get(key, 0)) + 1
    status["ready"] = 0
    status["uncountedTerminatedPods"] = {}
    if status.get("succeeded", 0) >= int(spec.get("completions", 1)):
        status["completionTime"] = stamp
        status["conditions"] = [
            _condition("SuccessCriteriaMet", "CompletionsReached", _COMPLETIONS_MESSAGE, stamp),
            _condition("Complete", "CompletionsReached", _COMPLETIONS_MESSAGE, stamp),
        ]
        return JobStep.COMPLETE
    if status.get("failed", 0) > int(spec.get("backoffLimit", 6)):
        status["conditions"] = [
            _condition("FailureTarget", "BackoffLimitExceeded", _BACKOFF_MESSAGE, stamp),
            _condition("Failed", "BackoffLimitExceeded", _BACKOFF_MESSAGE, stamp),
        ]
        return JobStep.FAILED
    return JobStep.WAIT if active else JobStep.RETRY


def finished_event(step: JobStep) -> tuple[str, str, str] | None:
    """(type, reason, message) of the event the controller records for a decided Job."""
    if step is JobStep.COMPLETE:
        return "Normal", "Completed", "Job completed"
    if step is JobStep.FAILED:
        return "Warning", "BackoffLimitExceeded", _BACKOFF_MESSAGE
    return None


def drop_tracking_finalizer(pod: JsonObject) -> None:
    """Once counted, the controller lets the pod go."""
    finalizers = [f for f in pod["metadata"].get("finalizers") or () if f != TRACKING_FINALIZER]
    if finalizers:
        pod["metadata"]["finalizers"] = finalizers
    else:
        pod["metadata"].pop("finalizers", None)

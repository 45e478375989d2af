"""A Job controller: one pod at a time per Job, retries up to backoffLimit, Complete/Failed
conditions, and ttlSecondsAfterFinished."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from .errors import ApiError
from .events import record_event
from .kubetime import now_ns, rfc3339
from .store import JOBS, PODS, Change, JsonObject, Store

Deleter = Callable[[str, str], None]  # (namespace, job name): delete with Background propagation


def _owner_job_uid(pod: JsonObject) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("kind") == "Job" and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _finished(job: JsonObject) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


class JobController:
    """Reacts to store changes; the sandbox passes a deleter for the TTL backstop."""

    def __init__(self, store: Store, delete_job: Deleter) -> None:
        self._store = store
        self._delete_job = delete_job
        self._stopping = threading.Event()
        store.subscribe(self._on_change)

    def stop(self) -> None:
        self._stopping.set()

    def _on_change(self, change: Change) -> None:
        if change.resource is JOBS and change.type == "ADDED":
            if not change.object["spec"].get("suspend"):
                self._start_pod(change.object)
        elif change.resource is PODS:
            uid = _owner_job_uid(change.object)
            if uid is None:
                return
            phase = change.object["status"].get("phase")
            before = (change.previous or {}).get("status", {}).get("phase")
            if change.type == "MODIFIED" and phase in ("Succeeded", "Failed") and before != phase:
                self._pod_finished(uid, succeeded=phase == "Succeeded", pod=change.object)
            elif change.type == "DELETED" and phase not in ("Succeeded", "Failed"):
                self._pod_finished(uid, succeeded=False, pod=change.object, deleted=True)

    def _start_pod(self, job: JsonObject) -> None:
        meta = job["metadata"]
        template = job["spec"]["template"]
        pod: JsonObject = {
            "metadata": {
                "generateName": f"{meta['name']}-",
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
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
                "finalizers": ["batch.kubernetes.io/job-tracking"],
            },
            "spec": template["spec"],
        }
        if not pod["metadata"]["annotations"]:
            del pod["metadata"]["annotations"]
        prepared = self._store.prepare_new(PODS, pod, meta["namespace"])
        prepared["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        with contextlib.suppress(ApiError):
            self._update(
                job,
                lambda j: j["status"].update(
                    {
                        "active": 1,
                        "ready": 0,
                        "terminating": 0,
                        "startTime": j["status"].get("startTime") or rfc3339(now_ns()),
                    }
                ),
            )
        created = self._store.create(PODS, prepared)
        record_event(
            self._store,
            job,
            reason="SuccessfulCreate",
            message=f"Created pod: {created['metadata']['name']}",
            component="job-controller",
        )

    def _update(self, job: JsonObject, mutate: Callable[[JsonObject], None]) -> JsonObject:
        meta = job["metadata"]
        return self._store.update(JOBS, meta["namespace"], meta["name"], mutate)

    def _pod_finished(
        self, job_uid: str, *, succeeded: bool, pod: JsonObject, deleted: bool = False
    ) -> None:
        found = self._store.find_by_uid(job_uid)
        if found is None or found[0] is not JOBS or _finished(found[1]):
            return
        job = found[1]
        now = rfc3339(now_ns())
        failed_count = int(job["status"].get("failed", 0)) + (0 if succeeded else 1)
        give_up = not succeeded and failed_count > int(job["spec"].get("backoffLimit", 6))

        def settle(j: JsonObject) -> None:
            status: dict[str, Any] = j["status"]
            status["active"] = 0
            status["ready"] = 0
            if succeeded:
                status["succeeded"] = int(status.get("succeeded", 0)) + 1
                status["completionTime"] = now
                status["conditions"] = [
                    _condition(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        now,
                    ),
                    _condition(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        now,
                    ),
                ]
            else:
                status["failed"] = failed_count
                if give_up:
                    status["conditions"] = [
                        _condition(
                            "FailureTarget",
                            "BackoffLimitExceeded",
                            "Job has reached the specified backoff limit",
                            now,
                        ),
                        _condition(
                            "Failed",
                            "BackoffLimitExceeded",
                            "Job has reached the specified backoff limit",
                            now,
                        ),
                    ]
            status["uncountedTerminatedPods"] = {}

        try:
            job = self._update(job, settle)
        except ApiError:
            return
        if succeeded:
            record_event(
                self._store,
                job,
                reason="Completed",
                message="Job completed",
                component="job-controller",
            )
        elif give_up:
            record_event(
                self._store,
                job,
                reason="BackoffLimitExceeded",
                message="Job has reached the specified backoff limit",
                type="Warning",
                component="job-controller",
            )
        else:
            self._start_pod(job)
            return
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        if ttl is not None:
            meta = job["metadata"]
            threading.Thread(
                target=self._expire,
                args=(meta["namespace"], meta["name"], meta["uid"], float(ttl)),
                daemon=True,
            ).start()
        del pod, deleted

    def _expire(self, namespace: str, name: str, uid: str, ttl: float) -> None:
        if self._stopping.wait(ttl):
            return
        current = self._store.find(JOBS, namespace, name)
        if current is not None and current["metadata"]["uid"] == uid:
            with contextlib.suppress(ApiError):
                self._delete_job(namespace, name)


def _condition(type_: str, reason: str, message: str, now: str) -> JsonObject:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }

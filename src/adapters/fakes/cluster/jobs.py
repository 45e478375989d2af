"""FakeCluster's Jobs controller: the rules of kube_semantics.jobs, run on store changes in
virtual time (a Job's pod is created at the Job's creation time, a retry at its failure's)."""

from __future__ import annotations

import functools

from pegboard.adapters.kube_semantics import jobs as rules
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339, seconds_to_nanos
from pegboard.domain.ports.cluster import JsonObject

from .store import FakeStore
from .virtual_time import VirtualSchedule


class FakeJobsController:
    """One pod at a time per Job, retried up to backoffLimit; Complete/Failed conditions."""

    def __init__(self, store: FakeStore, schedule: VirtualSchedule) -> None:
        self._store = store
        self._schedule = schedule
        store.subscribe(self._on_change)

    def _on_change(
        self, change: str, obj: JsonObject, previous: JsonObject | None, at: float
    ) -> None:
        if obj["kind"] == "Job" and change == "ADDED" and not obj["spec"].get("suspend"):
            self._schedule.push(at, functools.partial(self._create_pod, obj["metadata"]["uid"]))
        elif obj["kind"] == "Pod":
            uid = rules.owner_job_uid(obj)
            outcome = rules.pod_outcome(change, obj, previous)
            if uid is not None and outcome is not None:
                self._pod_finished(uid, obj, succeeded=outcome, at=at)

    def _live_job(self, uid: str) -> JsonObject | None:
        """The Job, unless it is gone, being deleted or already decided."""
        job = self._store.by_uid(uid)
        if job is None or job["kind"] != "Job":
            return None
        return None if rules.is_being_deleted(job) or rules.is_finished(job) else job

    def _create_pod(self, job_uid: str, at: float) -> None:
        job = self._live_job(job_uid)
        if job is None:
            return
        stamp = format_rfc3339(seconds_to_nanos(at))
        namespace = job["metadata"]["namespace"]
        # Counted before the pod exists, like the sandbox's controller (see its note).
        self._store.update(job, lambda j: rules.count_started(j, stamp))
        created = self._store.create(rules.pod_for_job(job), namespace, dry_run=False)
        message = f"Created pod: {created['metadata']['name']}"
        self._store.add_event(job, "Normal", "SuccessfulCreate", message, "job-controller")

    def _pod_finished(self, job_uid: str, pod: JsonObject, *, succeeded: bool, at: float) -> None:
        job = self._live_job(job_uid)
        if job is None:
            return
        stamp = format_rfc3339(seconds_to_nanos(at))
        step = rules.JobStep.WAIT

        def count(j: JsonObject) -> None:
            nonlocal step
            step = rules.count_finished(j, succeeded=succeeded, stamp=stamp)

        self._store.update(job, count)
        meta = pod["metadata"]
        if self._store.get("Pod", meta["namespace"], meta["name"]) is pod:
            self._store.update(pod, rules.drop_tracking_finalizer)
        if step is rules.JobStep.RETRY:
            self._schedule.push(at, functools.partial(self._create_pod, job_uid))
        elif (event := rules.finished_event(step)) is not None:
            event_type, reason, message = event
            self._store.add_event(job, event_type, reason, message, "job-controller")

"""The sandbox's Jobs controller: the rules of kube_semantics.jobs, run on store changes in the
mutating thread, plus ttlSecondsAfterFinished on a timer thread."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from pegboard.adapters.kube_semantics import jobs as rules
from pegboard.adapters.kube_semantics.defaults import default_object
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339
from pegboard.adapters.kube_semantics.status import StatusError

from .events import record_event
from .store import JOBS, PODS, Change, JsonObject, Store

Deleter = Callable[[str, str], None]  # (namespace, job name): delete with Background propagation
# The apiserver's admission of a pod create: admit(pod, create) -> (create's result, warnings),
# or a StatusError when a plugin refuses it (see admission.Admission.admit_pod_and).
PodAdmission = Callable[
    [JsonObject, Callable[[JsonObject], JsonObject]], tuple[JsonObject, list[str]]
]
# pkg/controller/job/job_controller.go: a sync that fails (a refused pod create) is retried
# with the queue's exponential backoff, DefaultJobApiBackOff (1s) doubling to MaxJobApiBackOff.
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 60.0


def _now() -> str:
    return format_rfc3339(time.time_ns())


class JobController:
    """Reacts to store changes; the sandbox passes a deleter for the TTL backstop."""

    def __init__(
        self, store: Store, delete_job: Deleter, admit: PodAdmission | None = None
    ) -> None:
        self._store = store
        self._delete_job = delete_job
        self._admit = admit
        self._stopping = threading.Event()
        store.subscribe(self._on_change)

    def stop(self) -> None:
        self._stopping.set()

    def _on_change(self, change: Change) -> None:
        if change.resource is JOBS and change.type == "ADDED":
            if not change.object["spec"].get("suspend"):
                self._start_pod(change.object)
        elif change.resource is PODS:
            uid = rules.owner_job_uid(change.object)
            outcome = rules.pod_outcome(change.type, change.object, change.previous)
            if uid is not None and outcome is not None:
                self._pod_finished(uid, change.object, succeeded=outcome)

    def _live_job(self, uid: str) -> JsonObject | None:
        found = self._store.find_by_uid(uid)
        if found is None or found[0] is not JOBS:
            return None
        job = found[1]
        return None if rules.is_being_deleted(job) or rules.is_finished(job) else job

    def _update(self, job: JsonObject, mutate: Callable[[JsonObject], None]) -> JsonObject:
        meta = job["metadata"]
        return self._store.update(JOBS, meta["namespace"], meta["name"], mutate)

    def _start_pod(self, job: JsonObject, retry_in: float = FIRST_RETRY_SECONDS) -> None:
        prepared = self._store.prepare_new(
            PODS, rules.pod_for_job(job), job["metadata"]["namespace"]
        )
        default_object(PODS, prepared)

        def create(pod: JsonObject) -> JsonObject:
            # Counted before it exists: a pod that ends at once must find itself counted as active.
            with contextlib.suppress(StatusError):
                self._update(job, lambda j: rules.count_started(j, _now()))
            return self._store.create(PODS, pod)

        try:
            created = create(prepared) if self._admit is None else self._admit(prepared, create)[0]
        except StatusError as exc:
            if exc.code != 403:
                raise
            # controller_utils.go RealPodControl.createPods: the refusal becomes an event on the
            # Job (FailedCreate, "Error creating: <the apiserver's message>"); the Job stays
            # active without a pod and the controller tries again later.
            record_event(
                self._store,
                job,
                reason="FailedCreate",
                message=f"Error creating: {exc.message}",
                type="Warning",
                component="job-controller",
            )
            threading.Thread(
                target=self._retry, args=(job["metadata"]["uid"], retry_in), daemon=True
            ).start()
            return
        record_event(
            self._store,
            job,
            reason="SuccessfulCreate",
            message=f"Created pod: {created['metadata']['name']}",
            component="job-controller",
        )

    def _retry(self, job_uid: str, delay: float) -> None:
        if self._stopping.wait(delay):
            return
        job = self._live_job(job_uid)
        if job is None or job["spec"].get("suspend"):
            return
        with contextlib.suppress(StatusError):
            self._start_pod(job, min(delay * 2, MAX_RETRY_SECONDS))

    def _pod_finished(self, job_uid: str, pod: JsonObject, *, succeeded: bool) -> None:
        job = self._live_job(job_uid)
        if job is None:
            return
        step = rules.JobStep.WAIT

        def count(j: JsonObject) -> None:
            nonlocal step
            step = rules.count_finished(j, succeeded=succeeded, stamp=_now())

        try:
            job = self._update(job, count)
        except StatusError:
            return
        meta = pod["metadata"]
        with contextlib.suppress(StatusError):
            self._store.update(PODS, meta["namespace"], meta["name"], rules.drop_tracking_finalizer)
        if step is rules.JobStep.RETRY:
            self._start_pod(job)
            return
        event = rules.finished_event(step)
        if event is None:
            return
        type_, reason, message = event
        record_event(
            self._store, job, reason=reason, message=message, type=type_, component="job-controller"
        )
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        if ttl is not None:
            threading.Thread(
                target=self._expire,
                args=(
                    job["metadata"]["namespace"],
                    job["metadata"]["name"],
                    job["metadata"]["uid"],
                    float(ttl),
                ),
                daemon=True,
            ).start()

    def _expire(self, namespace: str, name: str, uid: str, ttl: float) -> None:
        if self._stopping.wait(ttl):
            return
        current = self._store.find(JOBS, namespace, name)
        if current is not None and current["metadata"]["uid"] == uid:
            with contextlib.suppress(StatusError):
                self._delete_job(namespace, name)

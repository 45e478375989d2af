"""Which pod a run follows, and a Job's retries: the first pod of the Job not followed before is
the next one to follow, and a failed pod is followed by the next while the Job may retry."""

from __future__ import annotations

from collections.abc import Callable

from pegboard.domain.errors import PortError
from pegboard.domain.ports.cluster import Cluster, JsonObject, ResourceKind
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

from .status import StatusUI


class FollowedPod:
    """The pod being followed: known from the start for a Pod, found among a Job's pods."""

    def __init__(self, name: str | None, *, on_found: Callable[[str], None]) -> None:
        self.name = name
        self.uid: str | None = None
        self.seen: set[str] = set()  # Job mode: the pods already followed
        self._on_found = on_found

    def owns(self, pod: JsonObject) -> bool:
        """Whether a watched pod is the one followed; in Job mode, adopts the next new pod."""
        meta = pod.get("metadata") or {}
        if self.name is None:
            # Job mode: the first pod of our Job not followed before is the one we follow.
            if meta.get("name") in self.seen:
                return False
            self.name = str(meta.get("name"))
            self.seen.add(self.name)
            self.uid = meta.get("uid")
            self._on_found(self.name)
            return True
        if meta.get("name") != self.name:
            return False
        if self.uid is None:
            self.uid = meta.get("uid")
        return self.uid is None or meta.get("uid") in (None, self.uid)

    def forget(self) -> None:
        """Drop the finished pod so the next pod of the Job is found."""
        self.name = None
        self.uid = None


def attempts_allowed(resolved: ResolvedRun) -> int:
    """How many pods the Job may run in all: backoffLimit retries after the first."""
    spec = resolved.manifest.get("spec") or {}
    try:
        return int(spec.get("backoffLimit", 0)) + 1
    except (TypeError, ValueError):
        return 1  # the apiserver would have refused it; never retry on a guess


def job_finished(
    cluster: Cluster, ui: StatusUI, *, name: str, namespace: str, pods_followed: int
) -> bool:
    """The Job is gone, or Complete/Failed with no pod we have not followed yet (a retry pod
    may finish before we look; a read failure ends the run as before retries were followed)."""
    try:
        job = cluster.read(ResourceKind.JOB, name, namespace=namespace)
    except PortError as exc:
        ui.warn(f"could not read job {name}: {exc}")
        return True
    if job is None:
        return True
    status = job.get("status") or {}
    decided = any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    counted = int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
    return decided and counted <= pods_followed

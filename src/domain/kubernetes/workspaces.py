"""The workspace claim of a runpod-deploy GPU pod, as both tools read it (pure).

runpod-deploy's kubernetes provider gives a run with `storage.volume_gb` a PersistentVolumeClaim
of its own, named as its pod (docs/runpod-deploy/kubernetes.md). The claim bills for its disk
for as long as it exists, so it goes with its pod, except when the user asked to keep it:

- `stop` deletes the pod and keeps the claim, stamped STOPPED_AT;
- `preserve`, and `recycle` where it keeps the pod running, keep both, and stamp the claim
  KEEP_WORKSPACE with the action.

Whoever else deletes such a pod (`squarepeg clean --include-kept`, `squarepeg rm`) deletes its
claim with it unless the claim carries one of those stamps: a pod that a killed run
left behind takes its disk along, a preserved one leaves its workspace to runpod-deploy (which
then lists it as a stopped pod, resumable, removed by `runpod-deploy cleanup`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pegboard.domain.kubernetes import labels

__all__ = [
    "KEEP_WORKSPACE",
    "STOPPED_AT",
    "TOOL_LABEL",
    "TOOL_VALUE",
    "is_runpod_deploy",
    "keep_reason",
    "workspace_claim",
]

TOOL_LABEL = "pegboard.io/tool"  # which pegboard tool made the object
TOOL_VALUE = "runpod-deploy"
STOPPED_AT = "pegboard.io/stopped-at"  # annotation on a claim: when `stop` kept it
KEEP_WORKSPACE = "pegboard.io/keep-workspace"  # annotation: the lifecycle action that kept it


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def is_runpod_deploy(obj: Mapping[str, Any], *, created_by: str | None = None) -> bool:
    """One of runpod-deploy's GPU pods or claims (of `created_by`, when given)."""
    own = _meta(obj).get("labels") or {}
    return (
        own.get(labels.MANAGED_BY) == labels.MANAGED_BY_VALUE
        and own.get(TOOL_LABEL) == TOOL_VALUE
        and (created_by is None or own.get(labels.CREATED_BY) == created_by)
    )


def workspace_claim(pod: Mapping[str, Any]) -> str | None:
    """The name of the runpod-deploy pod's own claim (one named as the pod, that it mounts);
    None for any other pod, and for one on a network volume (the user's claim) or emptyDir."""
    name = _meta(pod).get("name")
    if not name or not is_runpod_deploy(pod):
        return None
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if (volume.get("persistentVolumeClaim") or {}).get("claimName") == name:
            return str(name)
    return None


def keep_reason(claim: Mapping[str, Any]) -> str | None:
    """Why the user's run keeps this workspace claim (`stop`, `preserve`, `recycle`), None
    when nobody asked."""
    notes = _meta(claim).get("annotations") or {}
    if notes.get(KEEP_WORKSPACE):
        return str(notes[KEEP_WORKSPACE])
    if notes.get(STOPPED_AT):
        return "stop"
    return None

"""PersistentVolumeClaims: validated as the apiserver does, then Bound at once, as a default
StorageClass with `volumeBindingMode: Immediate` and a dynamic provisioner would leave them.

Sources (kubernetes/kubernetes): pkg/apis/core/validation/validation.go
ValidatePersistentVolumeClaimSpec (`at least 1 access mode is required`, the storage request
required, access modes among ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod);
pkg/controller/volume/persistentvolume (a bound claim's spec.volumeName `pvc-<uid>`,
status.phase Bound, capacity, accessModes, the bind-completed and bound-by-controller
annotations). The data lives in the sandbox's `claims/` directory (Kubelet.claim_directory)
and goes when the claim is deleted and no pod mounts it.
"""

from __future__ import annotations

from pegboard.adapters.kube_semantics.status import invalid
from pegboard.adapters.kube_semantics.validation import required, unsupported

from .store import JsonObject

_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def check_claim(obj: JsonObject) -> None:
    """422 Invalid, with the apiserver's causes, for a claim it would refuse."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    causes = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append(required("spec.accessModes", "at least 1 access mode is required"))
    for index, mode in enumerate(modes):
        if mode not in _ACCESS_MODES:
            causes.append(unsupported(f"spec.accessModes[{index}]", mode, _ACCESS_MODES))
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        causes.append(required("spec.resources[storage]"))
    if causes:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise invalid("PersistentVolumeClaim", name, causes, group="")


def bind_claim(obj: JsonObject) -> None:
    """The claim as the PV controller leaves it once a volume was provisioned and bound."""
    spec = obj.setdefault("spec", {})
    uid = obj["metadata"]["uid"]
    spec.setdefault("storageClassName", "standard")
    spec.setdefault("volumeMode", "Filesystem")
    spec["volumeName"] = f"pvc-{uid}"
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations.setdefault("pv.kubernetes.io/bind-completed", "yes")
    annotations.setdefault("pv.kubernetes.io/bound-by-controller", "yes")
    obj["status"] = {
        "phase": "Bound",
        "accessModes": list(spec.get("accessModes") or []),
        "capacity": {"storage": spec["resources"]["requests"]["storage"]},
    }

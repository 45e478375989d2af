"""The admission chain of a pod or Job create, in the apiserver's plugin order.

pkg/kubeapiserver/options/plugins.go (AllOrderedPlugins): LimitRanger mutates first (its
defaults are what a server dry run shows), then the validating plugins run in order:
LimitRanger's min/max, PodSecurity, ResourceQuota (last, so only an otherwise admitted pod is
charged). The first refusal ends the request with a 403 worded by admission.NewForbidden:
`pods "<name>" is forbidden: <reason>`. A Job is only checked by PodSecurity's warn mode
(ValidatePodController); its pods go through the whole chain when the job controller creates
them. Pod creates in a namespace with a quota are serialised, so two pods cannot both take
its last slot.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pegboard.adapters.kube_semantics.defaults import qos_class
from pegboard.adapters.kube_semantics.resources import JOBS, LIMIT_RANGES, PODS, RESOURCE_QUOTAS
from pegboard.adapters.kube_semantics.status import StatusError, invalid
from pegboard.adapters.kube_semantics.validation import QUANTITY_HELP, invalid_value
from pegboard.domain.squarepeg.quantities import parse_k8s_quantity

from ..store import JsonObject, Store
from . import limit_ranger, pod_security, resource_quota

T = TypeVar("T")


def forbidden(pod: JsonObject, message: str) -> StatusError:
    name = (pod.get("metadata") or {}).get("name") or ""
    text = f'pods "{name}" is forbidden: {message}' if name else f"pods is forbidden: {message}"
    return StatusError(403, text, details={"name": name, "kind": "pods"})


class Admission:
    """Admission for the sandbox's pods and Jobs; `labels_of` gives a namespace's labels."""

    def __init__(self, store: Store, labels_of: Callable[[str], dict[str, str]]) -> None:
        self._store = store
        self._labels_of = labels_of
        self._lock = threading.RLock()

    def admit_pod_and(
        self, pod: JsonObject, then: Callable[[JsonObject], T]
    ) -> tuple[T, list[str]]:
        """Admit a stamped, defaulted pod (mutating it as LimitRanger does), then run `then`
        (the store create, or nothing for a dry run) before another pod is admitted. The
        result and the response warnings; a StatusError (403) when a plugin refuses."""
        namespace = pod["metadata"]["namespace"]
        quotas = self._store.list(RESOURCE_QUOTAS, namespace)[0]
        # Only a quota needs creates taken one at a time (its check and its charge together).
        with self._lock if quotas else contextlib.nullcontext():
            limit_ranges = self._store.list(LIMIT_RANGES, namespace)[0]
            limit_ranger.apply_defaults(pod, limit_ranges)
            if pod.get("status") is not None:
                pod["status"]["qosClass"] = qos_class(pod.get("spec") or {})
            problem = limit_ranger.violations(pod, limit_ranges)
            if problem is not None:
                raise forbidden(pod, problem)
            verdict = pod_security.admit(
                self._labels_of(namespace), pod.get("spec") or {}, enforce=True
            )
            if verdict.refusal is not None:
                raise forbidden(pod, verdict.refusal)
            if quotas:
                pods = self._store.list(PODS, namespace)[0]
                problem = resource_quota.check(pod, quotas, pods)
                if problem is not None:
                    raise forbidden(pod, problem)
            return then(pod), verdict.warnings

    def admit_job(self, job: JsonObject, namespace: str) -> list[str]:
        """ValidatePodController: warn mode on the Job's pod template, never a refusal; then
        the quota's `count/jobs.batch` (403 past it). The response warnings."""
        template = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
        warnings = pod_security.admit(self._labels_of(namespace), template, enforce=False).warnings
        quotas = self._store.list(RESOURCE_QUOTAS, namespace)[0]
        if quotas:
            jobs = len(self._store.list(JOBS, namespace)[0])
            problem = resource_quota.check_job(quotas, jobs)
            if problem is not None:
                name = (job.get("metadata") or {}).get("name") or ""
                raise StatusError(
                    403,
                    f'jobs.batch "{name}" is forbidden: {problem}',
                    details={"name": name, "group": "batch", "kind": "jobs"},
                )
        return warnings

    def with_quota_status(self, quota: JsonObject) -> JsonObject:
        """A ResourceQuota with the status its controller keeps (computed on read: always
        current as pods come and go)."""
        namespace = quota["metadata"].get("namespace", "")
        pods = self._store.list(PODS, namespace)[0]
        jobs = len(self._store.list(JOBS, namespace)[0])
        return {**quota, "status": resource_quota.quota_status(quota, pods, jobs)}


def _resource_lists(kind: str, obj: JsonObject) -> list[tuple[str, Any]]:
    spec = obj.get("spec") or {}
    if kind == "ResourceQuota":
        return [("spec.hard", spec.get("hard"))]
    found = []
    for index, item in enumerate(spec.get("limits") or ()):
        if isinstance(item, dict):
            for key in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"):
                found.append((f"spec.limits[{index}].{key}", item.get(key)))
    return found


def check_policy_quantities(kind: str, obj: JsonObject) -> None:
    """A quantity that does not parse fails decoding (400, as for a pod); a negative one is
    invalid (pkg/apis/core/validation ValidateResourceQuantityValue, 422)."""
    causes = []
    for path, resources in _resource_lists(kind, obj):
        if not isinstance(resources, dict):
            continue
        for name, raw in resources.items():
            value = parse_k8s_quantity(str(raw))
            if value is None:
                raise StatusError(
                    400, f'{kind} in version "v1" cannot be handled as a {kind}: {QUANTITY_HELP}'
                )
            if value < 0:
                causes.append(
                    invalid_value(f"{path}[{name}]", str(raw), "must be greater than or equal to 0")
                )
    if causes:
        raise invalid(kind, str((obj.get("metadata") or {}).get("name") or ""), causes)


def prepare_policy_object(kind: str, obj: JsonObject) -> None:
    """Defaults the apiserver applies when a ResourceQuota or LimitRange is stored (after
    checking its quantities)."""
    if kind in ("LimitRange", "ResourceQuota"):
        check_policy_quantities(kind, obj)
    if kind == "LimitRange":
        limit_ranger.default_limit_range(obj)
    elif kind == "ResourceQuota":
        resource_quota.default_resource_quota(obj)
        obj.pop("status", None)


__all__ = ["Admission", "forbidden", "prepare_policy_object"]

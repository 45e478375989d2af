"""The REST resources both emulators serve: plural, kind, group and apiVersion."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    """One REST resource (pods, events, batch jobs, coordination leases)."""

    plural: str
    kind: str
    api_version: str
    group: str = ""
    namespaced: bool = True

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified_kind(self) -> str:
        """`Job.batch` or `Pod`, as the apiserver names a kind in its messages."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def qualified_plural(self) -> str:
        """`jobs.batch` or `pods`, as in `jobs.batch "x" not found`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = Resource("pods", "Pod", "v1")
EVENTS = Resource("events", "Event", "v1")
JOBS = Resource("jobs", "Job", "batch/v1", "batch")
LEASES = Resource("leases", "Lease", "coordination.k8s.io/v1", "coordination.k8s.io")
PERSISTENT_VOLUME_CLAIMS = Resource("persistentvolumeclaims", "PersistentVolumeClaim", "v1")
# The objects that lock a namespace down (the sandbox serves them; the fake does not).
NAMESPACES = Resource("namespaces", "Namespace", "v1", namespaced=False)
RESOURCE_QUOTAS = Resource("resourcequotas", "ResourceQuota", "v1")
LIMIT_RANGES = Resource("limitranges", "LimitRange", "v1")
NODES = Resource("nodes", "Node", "v1", namespaced=False)  # the sandbox's declared nodes
_ALL = (
    PODS,
    EVENTS,
    JOBS,
    LEASES,
    PERSISTENT_VOLUME_CLAIMS,
    NAMESPACES,
    RESOURCE_QUOTAS,
    LIMIT_RANGES,
    NODES,
)
RESOURCES = {resource.plural: resource for resource in _ALL}
BY_KIND = {resource.kind: resource for resource in _ALL}

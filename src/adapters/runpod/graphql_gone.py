"""What needs RunPod's GraphQL API, and the error once it is gone: kept apart from
graphql_legacy.py so a run that needs no GraphQL never imports it (~20 ms of every CLI process)."""

from __future__ import annotations

from pegboard.domain.errors import Invalid, NoCandidateHelps
from pegboard.domain.ports.gpu_cloud import PodRequest


class GraphQLGone(Invalid, NoCandidateHelps):
    """RunPod's GraphQL API answered that it no longer exists (HTTP 404/410)."""


def why_graphql(request: PodRequest) -> tuple[str, str] | None:
    """(config key, what) when this create needs GraphQL; None when REST v2 can do it."""
    if request.spot:
        return "pod.spot", "a spot (interruptible) pod"
    if request.min_vcpu_count is not None:
        return "pod.min_vcpu_count", "a minimum vCPU count"
    if request.min_memory_gb is not None:
        return "pod.min_memory_gb", "a minimum memory size"
    return None

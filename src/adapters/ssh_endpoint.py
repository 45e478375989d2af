"""Where a pod's sshd listens: what the RunPod and ssh providers put in PodStatus.access once
a pod publishes it, and what their open_shell / open_sync read back (the core never looks
inside: domain/ports/gpu_cloud.py)."""

from __future__ import annotations

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import Transient
from pegboard.domain.ports.gpu_cloud import PodStatus

__all__ = ["SshEndpoint", "ssh_endpoint_of"]


@attrs.frozen
class SshEndpoint:
    """Where the pod's sshd listens, once published."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    host: str
    port: int
    user: str = "root"


def ssh_endpoint_of(status: PodStatus) -> SshEndpoint:
    """The SSH endpoint this pod published; Transient while it has published none."""
    endpoint = status.access
    if not isinstance(endpoint, SshEndpoint):
        raise Transient(f"pod {status.pod_id} has not published its SSH port yet")
    return endpoint

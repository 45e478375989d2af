"""The kinds of Kubernetes object pegboard creates (`ResourceKind`, re-exported by
`pegboard.domain.ports.cluster`, where the port that takes them lives).

Its own module so that code naming a kind (the squarepeg config and resolved run, on every
`squarepeg run --dry-run`) does not import the cluster port's protocols and value classes."""

from __future__ import annotations

import enum

__all__ = ["ResourceKind"]


class ResourceKind(enum.Enum):
    """The kinds pegboard creates: squarepeg's Pods and Jobs, the Lease that paces the orphan
    sweep, and the claims runpod-deploy's GPU pods keep their workspace on."""

    POD = "Pod"
    JOB = "Job"
    LEASE = "Lease"  # coordination.k8s.io/v1
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"

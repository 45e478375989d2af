"""Where the kubernetes provider's pods are: what a pointer records (cattrs-unstructured)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr

from .gpu_labels import DEFAULT_GPU_LABEL, DEFAULT_GPU_RESOURCE
from .section import DEFAULT_SCHEDULE_TIMEOUT_SEC


@attrs.frozen
class KubernetesLocator:
    """Where the kubernetes provider's pods are: a cluster (kubeconfig context, None: the
    current one or in-cluster) and a namespace (None: the context's, else default)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    context: str | None = None
    namespace: str | None = None
    gpu_resource: str = DEFAULT_GPU_RESOURCE
    gpu_label: str = DEFAULT_GPU_LABEL
    price_per_hour: Mapping[str, float] = attrs.field(factory=dict)
    storage_class: str | None = None
    ephemeral_claims: bool = True
    schedule_timeout_sec: float = float(DEFAULT_SCHEDULE_TIMEOUT_SEC)

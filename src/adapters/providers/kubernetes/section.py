"""The `kubernetes:` config section: which cluster and namespace (resolved as squarepeg and
kubectl resolve them), how the cluster names GPUs, and what they cost."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import KeyPath
from pegboard.domain.gpujob.provider_plugin import ConfigSection
from pegboard.domain.gpujob.spec import NonEmptyStr, PositiveFloat, PositiveInt
from pegboard.domain.kubernetes.labels import is_label_key, is_label_value
from pegboard.domain.kubernetes.names import is_rfc1123_label

from .gpu_labels import DEFAULT_GPU_LABEL, DEFAULT_GPU_RESOURCE, gpu_label_value

__all__ = ["KUBERNETES_PROVIDER", "KUBERNETES_SECTION", "KubernetesSpec", "kubernetes_rules"]

KUBERNETES_PROVIDER = "kubernetes"
DEFAULT_SCHEDULE_TIMEOUT_SEC = 120


class EphemeralVolume(enum.StrEnum):
    CLAIM = "claim"
    EMPTY_DIR = "empty_dir"


@attrs.frozen
class KubernetesSpec:
    # None: the kubeconfig's current context, else the pod's service account (in-cluster).
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    context: NonEmptyStr | None = None
    # None: the context's namespace, else `default`.
    namespace: NonEmptyStr | None = None
    gpu_resource: NonEmptyStr = NonEmptyStr(DEFAULT_GPU_RESOURCE)  # noqa: RUF009 - a str
    gpu_label: NonEmptyStr = NonEmptyStr(DEFAULT_GPU_LABEL)  # noqa: RUF009 - a str
    # USD per GPU-hour of each GPU type (the gpu_order names): the budget's price.
    price_per_hour: Mapping[NonEmptyStr, PositiveFloat] = attrs.field(factory=dict)
    # The run's own claim (storage.volume_gb): None is the cluster's default StorageClass.
    storage_class: NonEmptyStr | None = None
    # Ephemeral storage as a claim of the run's own (stop keeps it) or an emptyDir.
    ephemeral_volume: EphemeralVolume = EphemeralVolume.CLAIM
    # How long a GPU type may stay unschedulable before the walk tries the next one.
    schedule_timeout_sec: PositiveInt = PositiveInt(DEFAULT_SCHEDULE_TIMEOUT_SEC)  # noqa: RUF009


def kubernetes_rules(spec: KubernetesSpec, provider: str) -> list[tuple[KeyPath, str]]:
    found: list[tuple[KeyPath, str]] = []
    if spec.namespace is not None and not is_rfc1123_label(spec.namespace):
        found.append(
            (
                ("namespace",),
                f"{spec.namespace!r} is not a namespace name (a lowercase RFC1123 label)",
            )
        )
    for key, value in (("gpu_resource", spec.gpu_resource), ("gpu_label", spec.gpu_label)):
        if not is_label_key(value):
            found.append(((key,), f"{value!r} is not a Kubernetes resource/label name"))
    for gpu in spec.price_per_hour:
        if not is_label_value(gpu_label_value(gpu)):
            found.append(
                (("price_per_hour", gpu), f"{gpu!r} cannot be a node label value (GPU type)")
            )
    return found


KUBERNETES_SECTION = ConfigSection(key="kubernetes", type=KubernetesSpec, rules=kubernetes_rules)

"""`pod.provider: kubernetes`: a GPU pod on your own cluster, reached through the API server
(docs/runpod-deploy/kubernetes.md). The pod runs the job's image; every phase reaches it over
exec (the official client's websocket exec), files as a tar stream over exec.

Its locator names the cluster and the namespace as the run resolved them (the kubeconfig
context, or in-cluster when none), and how that cluster names GPUs, so `cleanup`, `logs` and
`ls-stale` reach the run's pods later from any directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pegboard.domain.gpujob.provider_plugin import BuildContext, LocatorContext, ProviderPlugin
from pegboard.domain.ports.backend import Backend, LocatorNeeded

from .locator import KubernetesLocator
from .section import (
    KUBERNETES_PROVIDER,
    KUBERNETES_SECTION,
    EphemeralVolume,
    KubernetesSpec,
)

if TYPE_CHECKING:
    from pegboard.domain.gpujob.spec import JobSpec

__all__ = ["PLUGIN", "KubernetesLocator"]


def _build(context: BuildContext, locator: KubernetesLocator | None) -> Backend:
    """No locator (a --provider flag alone): the pod commands ask every cluster and namespace
    this user's runs recorded (place_of), not whatever the kubeconfig points at today."""
    if locator is None:
        raise LocatorNeeded(
            "pod.provider kubernetes: no cluster to reach (a config's kubernetes: section, or a "
            "state file written by a run on that cluster)"
        )
    from .backend import kubernetes_backend

    return kubernetes_backend(context, locator)


def _from_config(spec: JobSpec, context: LocatorContext) -> KubernetesLocator:
    section: KubernetesSpec = spec.section("kubernetes")
    return KubernetesLocator(
        context=section.context,
        namespace=section.namespace,
        gpu_resource=section.gpu_resource,
        gpu_label=section.gpu_label,
        price_per_hour={str(gpu): float(price) for gpu, price in section.price_per_hour.items()},
        storage_class=section.storage_class,
        ephemeral_claims=section.ephemeral_volume is EphemeralVolume.CLAIM,
        schedule_timeout_sec=float(section.schedule_timeout_sec),
    )


def _place_of(locator: KubernetesLocator) -> tuple[str, str] | None:
    """One place per cluster and namespace."""
    if locator.namespace is None:
        return None
    name = f"{locator.context or 'current context'}/{locator.namespace}"
    return name, name


PLUGIN = ProviderPlugin(
    name=KUBERNETES_PROVIDER,
    summary="a GPU pod on your Kubernetes cluster, reached over exec (kubernetes.context)",
    locator_type=KubernetesLocator,
    build=_build,
    locator_from_config=_from_config,
    sections=(KUBERNETES_SECTION,),
    # A cluster is one place: the datacenter only names it in the records.
    pod_defaults={"datacenters": ["cluster"]},
    place_of=_place_of,
    # Nothing is rented: a claim's disk costs what your storage costs (not known here); the
    # budget prices GPUs by kubernetes.price_per_hour.
    billed=False,
    gpu_catalog=False,  # GPU types are node label values, checked by the scheduler at create
    live_stock=False,
    no_stock_note="a cluster has no stock to ask: the scheduler places a GPU type or `run` walks gpu_order on",
)

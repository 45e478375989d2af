"""The kubernetes provider's ports: one KubernetesCluster (one connection pool) per Backend, the
GpuCloud over it, and each pod's shell and files over exec through the same cluster."""

from __future__ import annotations

from pathlib import Path

import attrs

from pegboard.adapters.exec_shell import ExecShell
from pegboard.adapters.kubernetes_cluster import KubernetesCluster
from pegboard.adapters.system_clock import SystemClock
from pegboard.adapters.tar_file_sync import TarFileSync
from pegboard.domain.errors import PortError, UsageError
from pegboard.domain.gpujob.provider_plugin import BuildContext
from pegboard.domain.kubernetes.names import namespace_in_use
from pegboard.domain.ports.backend import Backend
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

from .gpu_cloud import KubernetesGpuCloud
from .locator import KubernetesLocator
from .pod_objects import GpuPodSettings, PodAddress

IN_CLUSTER = "in-cluster"  # what the credentials report when the service account was used
# What a run does in its namespace (docs/runpod-deploy/kubernetes.md, "RBAC"), as
# (verb, resource, subresource): asked before anything is created, so a missing permission is
# one line naming it rather than a pod left without a shell.
NEEDED = (
    ("create", "pods", ""),
    ("delete", "pods", ""),
    ("create", "pods", "exec"),
    ("create", "persistentvolumeclaims", ""),
)


def missing_permissions(cluster: KubernetesCluster, namespace: str) -> list[str]:
    """The needed permissions the cluster's authorizer denies (an unanswered review: none)."""
    denied = []
    for verb, resource, sub in NEEDED:
        if cluster.can_i(verb, resource, namespace=namespace, subresource=sub) is False:
            denied.append(f"{verb} {resource}/{sub}" if sub else f"{verb} {resource}")
    return denied


def kubernetes_backend(context: BuildContext, where: KubernetesLocator) -> Backend:
    cluster = KubernetesCluster(context=where.context, env=context.environ, home=Path(context.home))
    try:
        target = cluster.target()  # the kubeconfig (or service account) only: no request yet
    except UsageError as exc:  # an unknown context: the one line lists the ones that exist
        cluster.close()
        raise UsageError(f"kubernetes.context: {exc}") from None
    except PortError as exc:
        cluster.close()
        raise UsageError(f"pod.provider kubernetes: {exc}") from None
    namespace = namespace_in_use(where.namespace, target.namespace)
    settings = GpuPodSettings(
        gpu_resource=where.gpu_resource,
        gpu_label=where.gpu_label,
        created_by=context.user_name,
        storage_class=where.storage_class,
        ephemeral_claims=where.ephemeral_claims,
    )
    cloud = KubernetesGpuCloud(
        cluster,
        namespace=namespace,
        clock=SystemClock(),
        settings=settings,
        prices=where.price_per_hour,
        schedule_timeout_sec=where.schedule_timeout_sec,
    )

    def address(status: PodStatus) -> PodAddress:
        found = status.access
        return found if isinstance(found, PodAddress) else PodAddress(namespace, status.pod_id)

    def open_shell(status: PodStatus) -> RemoteShell:
        where = address(status)
        return ExecShell(
            cluster,
            namespace=where.namespace,
            pod=where.pod,
            container=where.container,
            cwd=status.workspace_root,
        )

    def open_sync(status: PodStatus) -> FileSync:
        where = address(status)
        return TarFileSync(
            cluster, namespace=where.namespace, pod=where.pod, container=where.container
        )

    # The context and namespace as resolved, so the commands after the run look where it ran
    # whatever the kubeconfig's current context is then (in-cluster: none to name).
    recorded_context = None if target.context == IN_CLUSTER else target.context

    def check_usable() -> None:
        denied = missing_permissions(cluster, namespace)
        if denied:
            raise UsageError(
                f"pod.provider kubernetes: missing permission in namespace {namespace!r}: "
                + ", ".join(denied)
                + f" (check with 'kubectl auth can-i create pods/exec -n {namespace}')"
            )

    return Backend(
        cloud=cloud,
        open_shell=open_shell,
        open_sync=open_sync,
        check_usable=check_usable,
        recycle_keeps_running=True,  # a stop deletes the pod: only a running one stays warm
        keep_workspace=cloud.keep_workspace,
        locator=attrs.evolve(where, context=recorded_context, namespace=namespace),
        close=cluster.close,
    )

"""After the run: delete what it created (or, with --keep, say how to inspect it), then sweep."""

from __future__ import annotations

import enum

from pegboard.domain.errors import PortError
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, ResourceKind
from pegboard.domain.squarepeg.resolved_run import ResolvedRun

from .status import StatusUI
from .sweep import sweep_after_run


class Removal(enum.Enum):
    """How far the removal of the run's own resource got (what a second Ctrl-C reports)."""

    NOT_STARTED = "not started"
    KEPT = "kept"  # --keep: left on purpose
    IN_FLIGHT = "in flight"  # the DELETE was sent; its answer has not arrived
    DONE = "done"  # deleted, or already gone
    FAILED = "failed"  # the apiserver refused or could not be reached: still there


class RemovalProgress:
    """Written by delete_or_keep, read by the second-Ctrl-C handler (same thread: no lock)."""

    def __init__(self) -> None:
        self.state = Removal.NOT_STARTED


def delete_or_keep(
    cluster: Cluster,
    ui: StatusUI,
    resolved: ResolvedRun,
    *,
    kind: ResourceKind,
    name: str,
    namespace: str,
    pod_name: str | None,
    progress: RemovalProgress | None = None,
) -> None:
    """Delete the run's Pod or Job; a failure only warns, since the container's code stands."""
    progress = progress or RemovalProgress()
    word = kind.value.lower()
    if resolved.keep:
        progress.state = Removal.KEPT
        pod = pod_name or f"job/{name}"
        ui.step(f"kept {word} {name}; inspect it with:")
        ui.detail(f"kubectl describe {word} {name} -n {namespace}")
        ui.detail(f"kubectl logs {pod} -n {namespace} -c {resolved.container_name}")
        ui.step("and remove it with:")
        ui.detail(f"squarepeg rm {name} -n {namespace}   (or: squarepeg clean --include-kept)")
        return
    progress.state = Removal.IN_FLIGHT
    try:
        deleted = cluster.delete(kind, name, namespace=namespace, propagation="Background")
    except PortError as exc:
        progress.state = Removal.FAILED
        # The container's code stands; say how to finish the job by hand.
        ui.warn(
            f"could not delete {word} {name}: {exc}; "
            f"delete it with 'kubectl delete {word} {name} -n {namespace}'"
        )
        return
    progress.state = Removal.DONE
    ui.detail(f"deleted {word} {name}" if deleted else f"{word} {name} was already gone")


def sweep_if_enabled(
    cluster: Cluster, clock: Clock, ui: StatusUI, resolved: ResolvedRun, *, namespace: str
) -> None:
    """Remove orphans of earlier runs (never this run's own resources), unless disabled."""
    if not resolved.sweep.enabled:
        return
    sweep_after_run(
        cluster,
        clock,
        ui,
        namespace=namespace,
        created_by=resolved.created_by,
        min_age_seconds=resolved.sweep.min_age_seconds,
        exclude_run_id=resolved.run_id,
        interval_seconds=resolved.sweep.interval_seconds,
        holder=resolved.run_id,
    )

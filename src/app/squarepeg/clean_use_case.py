"""The `squarepeg clean` use case: the orphan sweep on demand (no run to exclude, no
`orphan_sweep` switch).

`dry_run` lists what would be deleted on stdout (`output`: an aligned RESOURCE/CATEGORY/DETAIL
table, or JSON/YAML with every field) and deletes nothing.
RunnerError (125) when the list or any delete failed, 0 otherwise ("nothing to clean" included).
Kept resources (`--keep`) are left alone and counted in one line naming the way to remove them;
`include_kept` judges them like the others (finished or stuck, old enough) and asks first
(`confirm`) unless `yes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.domain.errors import PortError, RunnerError, UsageError
from pegboard.domain.kubernetes import labels
from pegboard.domain.kubernetes.labels import sanitize_label_value
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.orphans import JOB_NAME_LABEL, SweepDecision, plan_sweep

if TYPE_CHECKING:
    from pegboard.app.squarepeg.seams import ClusterPorts, Seams
    from pegboard.app.squarepeg.sweep import WorkspaceClaims
    from pegboard.domain.ports.cluster import Cluster

REMOVE_KEPT_HINT = "squarepeg clean --include-kept, or squarepeg rm NAME"


ORPHAN_COLUMNS = ("resource", "category", "detail")


def orphan_rows(decisions: Sequence[SweepDecision]) -> list[dict[str, Any]]:
    """One row per resource: the table's columns, and the fields JSON/YAML add."""
    return [
        {
            "resource": d.ref,
            "kind": d.kind.value,
            "name": d.name,
            "category": d.category.value,
            "age_seconds": round(d.age_seconds),
            "detail": d.detail,
        }
        for d in decisions
    ]


def orphan_table(decisions: Sequence[SweepDecision], output: str = "table") -> str:
    """What `clean --dry-run` prints on stdout, in the chosen output format."""
    from pegboard.app.shared.output import render

    return render(orphan_rows(decisions), output, columns=ORPHAN_COLUMNS)


def kept_selector(created_by: str) -> str:
    return (
        f"{labels.MANAGED_BY}={labels.MANAGED_BY_VALUE},"
        f"{labels.CREATED_BY}={created_by},{labels.KEEP}"
    )


def _unkept(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy without the keep label, for the sweep policy to judge like any other."""
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = {k: v for k, v in (meta.get("labels") or {}).items() if k != labels.KEEP}
    return {**obj, "metadata": meta}


def find_kept(
    cluster: Cluster, *, namespace: str, created_by: str, now: float, min_age_seconds: float
) -> tuple[list[dict[str, Any]], WorkspaceClaims]:
    """My kept Pods and Jobs, and those of them the sweep policy would delete if not kept (with
    the workspace claims of runpod-deploy's GPU pods among them, and those their runs keep)."""
    from pegboard.app.squarepeg.sweep import list_all, with_workspace_claims

    selector = kept_selector(created_by)
    pods = list_all(
        cluster,
        ResourceKind.POD,
        namespace=namespace,
        label_selector=f"{selector},!{JOB_NAME_LABEL}",
        from_cache=False,
    )
    jobs = list_all(
        cluster, ResourceKind.JOB, namespace=namespace, label_selector=selector, from_cache=False
    )
    kept = [*jobs, *pods]
    decisions = plan_sweep(
        pods=[_unkept(p) for p in pods],
        jobs=[_unkept(j) for j in jobs],
        created_by=created_by,
        now=now,
        min_age_seconds=min_age_seconds,
    )
    marked = tuple(attrs.evolve(d, detail=f"kept, {d.detail}") for d in decisions)
    claims = with_workspace_claims(cluster, marked, pods, namespace=namespace)
    return kept, claims


def execute_clean(
    seams: Seams,
    ports: ClusterPorts,
    *,
    dry_run: bool = False,
    min_age: int | None = None,
    namespace: str | None = None,
    context: str | None = None,
    quiet: bool = False,
    no_color: bool = False,
    output: str = "table",
    include_kept: bool = False,
    yes: bool = False,
    confirm: Callable[[str], bool] | None = None,
    config_paths: Sequence[str] = (),
    no_default_config: bool = False,
    profile: str | None = None,
) -> int:
    from pegboard.app.squarepeg.cluster_session import open_cluster_session
    from pegboard.app.squarepeg.status import write_stdout_text
    from pegboard.app.squarepeg.sweep import delete_orphans, find_orphans, kept_workspace_note

    if min_age is not None and min_age < 0:
        raise UsageError(f"--min-age {min_age}: must be 0 or more seconds")
    config, ui, cluster, ns = open_cluster_session(
        seams,
        ports,
        namespace=namespace,
        context=context,
        quiet=quiet,
        no_color=no_color,
        config_paths=config_paths,
        no_default_config=no_default_config,
        profile=profile,
    )
    created_by = sanitize_label_value(seams.user_name)
    age = config.orphan_sweep_min_age if min_age is None else min_age
    try:
        decisions = find_orphans(
            cluster,
            namespace=ns,
            created_by=created_by,
            now=ports.clock.now(),
            min_age_seconds=age,
            exclude_run_id=None,
        )
        kept, claims = find_kept(
            cluster, namespace=ns, created_by=created_by, now=ports.clock.now(), min_age_seconds=age
        )
    except PortError as exc:
        # The RBAC hint only where it helps: an unreachable cluster is not a permission problem.
        hint = (
            f" (clean needs list on pods and jobs, and get on the persistentvolumeclaims of "
            f"runpod-deploy's pods, in {ns!r})"
            if exc.status == 403
            else ""
        )
        raise RunnerError(f"listing orphans in namespace {ns!r} failed: {exc}{hint}") from None
    kept_decisions = claims.decisions
    if include_kept and kept_decisions and not dry_run and not yes:
        refs = ", ".join(d.ref for d in kept_decisions)
        if confirm is None or not confirm(f"also delete the kept {refs} in namespace {ns!r}?"):
            ui.step("kept resources left alone")
            kept_decisions = ()
    if include_kept:
        decisions = (*decisions, *kept_decisions)
        for claim, why in claims.kept if kept_decisions else ():
            ui.step(kept_workspace_note(claim, why))  # the pod goes, its workspace stays
    elif kept:
        ui.step(f"{len(kept)} kept resource(s) left alone (remove them with {REMOVE_KEPT_HINT})")
    if not decisions:
        if dry_run and output != "table":  # a script reading JSON/YAML gets an empty list
            return write_stdout_text(seams.stdout, orphan_table(decisions, output), seams.stderr)
        ui.success(f"nothing to clean in namespace {ns!r}")
        return 0
    if dry_run:
        code = write_stdout_text(seams.stdout, orphan_table(decisions, output), seams.stderr)
        if code:
            return code
        ui.step(f"would delete {len(decisions)} orphaned resource(s) in namespace {ns!r}")
        return 0

    def report(result: Any) -> None:
        ref = result.decision.ref
        if result.error is not None:
            ui.warn(f"could not delete {ref}: {result.error}")
        elif result.deleted:
            ui.detail(f"deleted {ref} ({result.decision.detail})")
        else:
            ui.detail(f"{ref} was already gone")

    results = delete_orphans(cluster, decisions, namespace=ns, on_result=report)
    failed = sum(1 for r in results if r.error is not None)
    gone = sum(1 for r in results if r.error is None and not r.deleted)
    cleaned = len(results) - failed
    summary = f"cleaned {cleaned} of {len(results)} ({gone} already gone, {failed} failed)"
    if failed:
        raise RunnerError(summary)
    ui.success(summary)
    return 0

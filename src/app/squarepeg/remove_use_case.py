"""The `squarepeg rm NAME...` use case: delete squarepeg Pods and Jobs by name, kept or not.

What `--keep` leaves behind is removed with it (the keep hint names the command), so nobody
needs kubectl. Only resources squarepeg made (its managed-by label) are deleted; a pod of a Job
is named through its Job. A runpod-deploy GPU pod's own claim goes with it, unless its run
asked to keep the workspace (domain/kubernetes/workspaces.py: preserve, recycle, stop). Every name is looked up first and one confirmation covers them all
(`confirm`, skipped with `yes`); a name that is not there is one line and exit 125 at the end,
after the others were deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pegboard.domain.errors import PortError, RunnerError, UsageError
from pegboard.domain.kubernetes import labels
from pegboard.domain.ports.cluster import ResourceKind

POD = ResourceKind.POD

if TYPE_CHECKING:
    from pegboard.app.squarepeg.seams import ClusterPorts, Seams

# (question) -> yes?  The CLI asks on the terminal; tests answer directly.
Confirm = Callable[[str], bool]


def execute_remove(
    seams: Seams,
    ports: ClusterPorts,
    *,
    names: Sequence[str],
    confirm: Confirm,
    yes: bool = False,
    namespace: str | None = None,
    context: str | None = None,
    quiet: bool = False,
    no_color: bool = False,
    config_paths: Sequence[str] = (),
    no_default_config: bool = False,
    profile: str | None = None,
) -> int:
    from pegboard.app.squarepeg.cluster_session import open_cluster_session
    from pegboard.app.squarepeg.sweep import kept_workspace_note, workspace_claim_of

    _, ui, cluster, ns = open_cluster_session(
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

    found: list[tuple[ResourceKind, str]] = []
    problems: list[str] = []
    kept_claims: list[tuple[str, str]] = []
    for name in dict.fromkeys(names):  # each once, in the order given
        try:
            kind, obj = _find(cluster, name, ns)
            found.append((kind, name))
            claim = workspace_claim_of(cluster, obj, namespace=ns) if kind is POD else None
        except (UsageError, LookupError) as exc:
            problems.append(str(exc))
            continue
        except PortError as exc:
            raise RunnerError(f"looking up {name!r} in namespace {ns!r} failed: {exc}") from None
        if claim is not None and claim[1] is not None:
            kept_claims.append((claim[0], claim[1]))
        elif claim is not None:
            found.append((ResourceKind.PERSISTENT_VOLUME_CLAIM, claim[0]))
    if len(problems) > 1:  # one problem is the final error line itself: said once
        for problem in problems:
            ui.warn(problem)
    if found and not yes:
        listed = ", ".join(f"{kind.value.lower()}/{name}" for kind, name in found)
        if not confirm(f"delete {listed} in namespace {ns!r}?"):
            ui.step("nothing deleted")
            return 0 if not problems else _not_found(problems)

    for kept_claim, why in kept_claims:
        ui.step(kept_workspace_note(kept_claim, why))
    failed = 0
    for kind, name in found:
        ref = f"{kind.value.lower()}/{name}"
        try:
            deleted = cluster.delete(kind, name, namespace=ns, propagation="Background")
        except PortError as exc:
            failed += 1
            ui.warn(f"could not delete {ref}: {exc}")
            continue
        ui.detail(f"deleted {ref}" if deleted else f"{ref} was already gone")
    if failed:
        raise RunnerError(f"{failed} of {len(found)} could not be deleted")
    if problems:
        return _not_found(problems)
    ui.success(f"deleted {len(found)} resource(s) in namespace {ns!r}")
    return 0


def _not_found(problems: Sequence[str]) -> int:
    raise RunnerError(problems[0] if len(problems) == 1 else f"{len(problems)} names not removed")


def _find(cluster: Any, name: str, namespace: str) -> tuple[ResourceKind, dict[str, Any]]:
    """The squarepeg Job or bare Pod called `name` (a Job first: its pods go with it)."""
    for kind in (ResourceKind.JOB, ResourceKind.POD):
        obj = cluster.read(kind, name, namespace=namespace)
        if obj is None:
            continue
        meta = obj.get("metadata") or {}
        own = meta.get("labels") or {}
        ref = f"{kind.value.lower()}/{name}"
        if own.get(labels.MANAGED_BY) != labels.MANAGED_BY_VALUE:
            raise UsageError(f"{ref} was not made by squarepeg; delete it with kubectl")
        job = _owning_job(meta)
        if kind is ResourceKind.POD and job is not None:
            raise UsageError(f"{ref} belongs to job/{job}: squarepeg rm {job}")
        return kind, obj
    raise LookupError(f"no squarepeg pod or job {name!r} in namespace {namespace!r}")


def _owning_job(meta: dict[str, Any]) -> str | None:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and ref.get("name"):
            return str(ref["name"])
    return None

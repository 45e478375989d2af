"""The orphan sweep use case: find my left-behind Pods and Jobs, delete them a few at a time.

Two callers. After every run, best-effort (errors warn, never change the exit code), and at
most once per `orphan_sweep_interval` per user and namespace across all runners, paced by a
coordination.k8s.io/v1 Lease (pegboard.domain.squarepeg.sweep_schedule); its LISTs ask the
apiserver's watch cache and it deletes at most MAX_DELETES_PER_SWEEP, in random order. And
`squarepeg clean`, which always sweeps everything, paging through etcd (limit/continue).

Either way the LISTs are filtered on the server: mine, not kept, no Running pod, no Job's pod
(those are judged by their Job). Deletes run on up to DELETE_WORKERS daemon threads, so a second
Ctrl-C never waits for them.
"""

from __future__ import annotations

import enum
import queue
import random
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import Conflict, Forbidden, NotFound, PortError
from pegboard.domain.kubernetes import labels, workspaces
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, JsonObject, ResourceKind
from pegboard.domain.squarepeg.orphans import (
    NOT_RUNNING,
    PENDING,
    SweepDecision,
    bare_pod_sweep_selector,
    job_pods_selector,
    plan_sweep,
    sweep_selector,
    undecided_jobs,
)
from pegboard.domain.squarepeg.sweep_schedule import (
    FALLBACK_SWEEP_CHANCE,
    MAX_DELETES_PER_SWEEP,
    lease_expired,
    new_sweep_lease,
    pick_deletes,
    sweep_lease_name,
    taken_lease,
)

# Deletes in flight at once. Each DELETE is one round trip of mostly network and apiserver
# latency, so a few parallel ones hide it (200 orphans at 10 ms each: ~0.2 s instead of 2 s); past
# ~16 the gain flattens on a busy apiserver, and API Priority and Fairness would queue more
# anyway. KubernetesCluster's pool (POOL_MAXSIZE) keeps this many connections open.
DELETE_WORKERS = 16
PAGE_SIZE = 500  # objects per LIST page (the apiserver's own default chunk size for kubectl)
JOB_NAMES_PER_LIST = 50  # keeps a `job-name in (...)` selector well inside a URL


@attrs.frozen
class DeleteResult:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    decision: SweepDecision
    deleted: bool  # False: it was already gone
    error: str | None = None


class Turn(enum.Enum):
    """Whether this run sweeps now, and why."""

    SWEEP = "sweep"  # took the Lease (or no pacing asked for)
    NOT_DUE = "not due"  # someone swept within the interval
    RANDOM_SWEEP = "random sweep"  # Leases refused: the randomised schedule picked this run
    RANDOM_SKIP = "random skip"
    UNKNOWN = "unknown"  # the Lease could not be read (a transient error): skip this time


@attrs.frozen
class SweepReport:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    decisions: tuple[SweepDecision, ...] = ()
    results: tuple[DeleteResult, ...] = ()
    list_error: str | None = None
    turn: Turn = Turn.SWEEP
    left_for_next: int = 0  # orphans over the cap, left to the next sweep

    @property
    def failed(self) -> tuple[DeleteResult, ...]:
        return tuple(r for r in self.results if r.error is not None)

    @property
    def gone(self) -> int:
        return sum(1 for r in self.results if r.error is None and not r.deleted)

    @property
    def deleted(self) -> int:
        return sum(1 for r in self.results if r.error is None and r.deleted)


def list_all(
    cluster: Cluster,
    kind: ResourceKind,
    *,
    namespace: str,
    label_selector: str,
    field_selector: str | None = None,
    from_cache: bool,
    page_size: int = PAGE_SIZE,
) -> list[JsonObject]:
    """Every matching object, page by page. `from_cache`: let the apiserver answer the first page
    from its watch cache (resourceVersion=0, NotOlderThan): no etcd read, possibly a little stale,
    which a sweep tolerates. An expired continue token restarts the list once."""
    items: list[JsonObject] = []
    token: str | None = None
    restarted = False
    while True:
        first = token is None
        try:
            page = cluster.list_page(
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
                resource_version="0" if from_cache and first else None,
                resource_version_match="NotOlderThan" if from_cache and first else None,
            )
        except PortError as exc:
            if exc.status != 410 or first or restarted:
                raise
            items, token, restarted = [], None, True  # the token expired: start again
            continue
        items.extend(page.items)
        if not page.continue_token:
            return items
        token = page.continue_token


def find_orphans(
    cluster: Cluster,
    *,
    namespace: str,
    created_by: str,
    now: float,
    min_age_seconds: float,
    exclude_run_id: str | None,
    from_cache: bool = False,
) -> tuple[SweepDecision, ...]:
    """List what may be an orphan of mine (filtered on the server) and classify it; raises
    PortError."""
    pods = list_all(
        cluster,
        ResourceKind.POD,
        namespace=namespace,
        label_selector=bare_pod_sweep_selector(created_by),
        field_selector=NOT_RUNNING,
        from_cache=from_cache,
    )
    jobs = list_all(
        cluster,
        ResourceKind.JOB,
        namespace=namespace,
        label_selector=sweep_selector(created_by),
        from_cache=from_cache,
    )
    # A Job without a final condition is an orphan only through a stuck (Pending) pod of its own.
    undecided = undecided_jobs(jobs, now=now, exclude_run_id=exclude_run_id)
    for start in range(0, len(undecided), JOB_NAMES_PER_LIST):
        pods += list_all(
            cluster,
            ResourceKind.POD,
            namespace=namespace,
            label_selector=job_pods_selector(
                created_by, undecided[start : start + JOB_NAMES_PER_LIST]
            ),
            field_selector=PENDING,
            from_cache=from_cache,
        )
    return plan_sweep(
        pods=pods,
        jobs=jobs,
        created_by=created_by,
        now=now,
        min_age_seconds=min_age_seconds,
        exclude_run_id=exclude_run_id,
    )


@attrs.frozen
class WorkspaceClaims:
    """What goes with the runpod-deploy GPU pods about to be deleted: their own claims (each
    decision right after its pod's), and those their runs asked to keep (claim, why)."""

    decisions: tuple[SweepDecision, ...] = ()
    kept: tuple[tuple[str, str], ...] = ()


def workspace_claim_of(
    cluster: Cluster, pod: JsonObject, *, namespace: str
) -> tuple[str, str | None] | None:
    """The runpod-deploy GPU pod's own claim, and why its run keeps it (None: nobody asked, it
    goes with the pod); None when the pod has no such claim, or it is gone, being deleted, or
    not of the pod's user. A claim bills for its disk: see domain/kubernetes/workspaces.py.
    Raises PortError (the claim cannot be read)."""
    name = workspaces.workspace_claim(pod)
    if name is None:
        return None
    claim = cluster.read(ResourceKind.PERSISTENT_VOLUME_CLAIM, name, namespace=namespace)
    owner = ((pod.get("metadata") or {}).get("labels") or {}).get(labels.CREATED_BY)
    if claim is None or not workspaces.is_runpod_deploy(claim, created_by=owner or ""):
        return None
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return None
    return name, workspaces.keep_reason(claim)


def kept_workspace_note(claim: str, why: str) -> str:
    """What clean and rm say of a GPU pod's claim that stays with the pod gone: its run asked."""
    return (
        f"persistentvolumeclaim/{claim} kept: its run asked to keep its workspace ({why}); "
        "runpod-deploy lists it as a stopped pod (remove it with: runpod-deploy cleanup "
        f"--pod-id {claim} --provider kubernetes --mode delete)"
    )


def with_workspace_claims(
    cluster: Cluster,
    decisions: Sequence[SweepDecision],
    pods: Sequence[JsonObject],
    *,
    namespace: str,
) -> WorkspaceClaims:
    """`decisions` with, after each runpod-deploy GPU pod's, the decision to delete its own
    claim unless its run asked to keep it (workspace_claim_of). Raises PortError."""
    by_name = {str((p.get("metadata") or {}).get("name", "")): p for p in pods}
    out: list[SweepDecision] = []
    kept: list[tuple[str, str]] = []
    for decision in decisions:
        out.append(decision)
        pod = by_name.get(decision.name) if decision.kind is ResourceKind.POD else None
        found = workspace_claim_of(cluster, pod, namespace=namespace) if pod else None
        if found is None:
            continue
        name, reason = found
        if reason is not None:
            kept.append((name, reason))
            continue
        detail = f"the workspace of pod/{decision.name}"
        claim = attrs.evolve(
            decision, kind=ResourceKind.PERSISTENT_VOLUME_CLAIM, name=name, detail=detail
        )
        out.append(claim)
    return WorkspaceClaims(tuple(out), tuple(kept))


def delete_orphans(
    cluster: Cluster,
    decisions: Sequence[SweepDecision],
    *,
    namespace: str,
    workers: int = DELETE_WORKERS,
    on_result: Callable[[DeleteResult], None] | None = None,
) -> tuple[DeleteResult, ...]:
    """Delete each orphan (Jobs with Background propagation), up to `workers` at once."""
    todo: queue.SimpleQueue[SweepDecision] = queue.SimpleQueue()
    for decision in decisions:
        todo.put(decision)
    done: queue.SimpleQueue[DeleteResult] = queue.SimpleQueue()

    def work() -> None:
        while True:
            try:
                decision = todo.get_nowait()
            except queue.Empty:
                return
            try:
                deleted = cluster.delete(
                    decision.kind, decision.name, namespace=namespace, propagation="Background"
                )
                done.put(DeleteResult(decision, deleted))
            except PortError as exc:
                done.put(DeleteResult(decision, False, str(exc) or type(exc).__name__))
            except Exception as exc:  # one bad delete must not stall the others
                done.put(DeleteResult(decision, False, f"{type(exc).__name__}: {exc}"))

    for _ in range(min(workers, len(decisions))):
        threading.Thread(target=work, name="squarepeg-sweep", daemon=True).start()
    results: list[DeleteResult] = []
    while len(results) < len(decisions):
        result = done.get()  # interruptible: a second Ctrl-C leaves at once
        results.append(result)
        if on_result is not None:
            on_result(result)
    order = {id(d): i for i, d in enumerate(decisions)}
    return tuple(sorted(results, key=lambda r: order.get(id(r.decision), 0)))


class SweepNotices(Protocol):
    """What the sweep tells the user (the status UI satisfies it)."""

    def step(self, text: str) -> None: ...

    def detail(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...


def take_sweep_turn(
    cluster: Cluster,
    notices: SweepNotices,
    *,
    namespace: str,
    created_by: str,
    holder: str,
    now: float,
    interval_seconds: int,
    rng: random.Random,
) -> Turn:
    """Sweep only if no runner of mine swept in this namespace within the interval (the Lease)."""
    name = sweep_lease_name(created_by)
    try:
        lease = cluster.read(ResourceKind.LEASE, name, namespace=namespace)
        if lease is None:
            fresh = new_sweep_lease(
                name=name,
                created_by=created_by,
                holder=holder,
                now=now,
                interval_seconds=interval_seconds,
            )
            cluster.create(fresh, namespace=namespace)
            return Turn.SWEEP
        if not lease_expired(lease, now=now):
            return Turn.NOT_DUE
        taken = taken_lease(lease, holder=holder, now=now, interval_seconds=interval_seconds)
        cluster.replace(ResourceKind.LEASE, name, taken, namespace=namespace)
        return Turn.SWEEP
    except (Conflict, NotFound):
        return Turn.NOT_DUE  # another runner took it between our read and our write
    except Forbidden as exc:
        chance = round(1 / FALLBACK_SWEEP_CHANCE)
        notices.detail(
            f"orphan sweep: cannot use Lease {name} in {namespace!r} ({exc}); "
            f"sweeping after about 1 run in {chance} instead "
            "(it needs get, create and update on leases.coordination.k8s.io)"
        )
        return Turn.RANDOM_SWEEP if rng.random() < FALLBACK_SWEEP_CHANCE else Turn.RANDOM_SKIP
    except PortError as exc:
        notices.detail(f"orphan sweep skipped: reading Lease {name} failed: {exc}")
        return Turn.UNKNOWN


def sweep_after_run(
    cluster: Cluster,
    clock: Clock,
    notices: SweepNotices,
    *,
    namespace: str,
    created_by: str,
    min_age_seconds: float,
    exclude_run_id: str | None,
    interval_seconds: int = 0,
    holder: str | None = None,
    max_deletes: int = MAX_DELETES_PER_SWEEP,
    rng: random.Random | None = None,
) -> SweepReport:
    """The best-effort sweep that rides along with a run: never raises, only warns.

    `interval_seconds` > 0 paces it through the Lease; 0 sweeps after every run."""
    rng = rng or random.Random()
    turn = Turn.SWEEP
    if interval_seconds > 0:
        turn = take_sweep_turn(
            cluster,
            notices,
            namespace=namespace,
            created_by=created_by,
            holder=holder or exclude_run_id or "squarepeg",
            now=clock.now(),
            interval_seconds=interval_seconds,
            rng=rng,
        )
        if turn not in (Turn.SWEEP, Turn.RANDOM_SWEEP):
            return SweepReport(turn=turn)
    try:
        decisions = find_orphans(
            cluster,
            namespace=namespace,
            created_by=created_by,
            now=clock.now(),
            min_age_seconds=min_age_seconds,
            exclude_run_id=exclude_run_id,
            from_cache=True,
        )
    except PortError as exc:
        notices.warn(
            f"orphan sweep skipped: {exc} (it needs list on pods and jobs in {namespace!r}; "
            "set 'orphan_sweep: false' to turn it off)"
        )
        return SweepReport(list_error=str(exc), turn=turn)
    if not decisions:
        return SweepReport(turn=turn)
    chosen, left = pick_deletes(decisions, cap=max_deletes, rng=rng)
    notices.step(f"sweeping {len(chosen)} orphaned resource(s)")
    if left:
        notices.detail(
            f"{left} more orphan(s) left for the next sweep (at most {max_deletes} a run)"
        )

    def report(result: DeleteResult) -> None:
        ref = result.decision.ref
        if result.error is not None:
            notices.warn(f"could not delete orphan {ref}: {result.error}")
        else:
            notices.detail(f"deleted orphan {ref} ({result.decision.detail})")

    results = delete_orphans(cluster, chosen, namespace=namespace, on_result=report)
    return SweepReport(tuple(chosen), results, turn=turn, left_for_next=left)

"""The orphan sweep use case: find my left-behind Pods and Jobs, delete them a few at a time.

Used best-effort after every run (errors warn, never change the exit code) and on demand by
`squarepeg clean`. Deletes run on up to DELETE_WORKERS daemon threads, so a second Ctrl-C never
waits for them. The lists are filtered by label selector on the server, read once.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from pegboard.domain.errors import PortError
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, ResourceKind
from pegboard.domain.squarepeg.orphans import SweepDecision, plan_sweep, sweep_selector

# Deletes in flight at once. Each DELETE is one round trip of mostly network and apiserver
# latency, so a few parallel ones hide it (200 orphans at 10 ms each: ~0.2 s instead of 2 s); past
# ~16 the gain flattens on a busy apiserver, and API Priority and Fairness would queue more
# anyway. KubernetesCluster's pool (POOL_MAXSIZE) keeps this many connections open.
DELETE_WORKERS = 16


@attrs.frozen
class DeleteResult:
    decision: SweepDecision
    deleted: bool  # False: it was already gone
    error: str | None = None


@attrs.frozen
class SweepReport:
    decisions: tuple[SweepDecision, ...] = ()
    results: tuple[DeleteResult, ...] = ()
    list_error: str | None = None

    @property
    def failed(self) -> tuple[DeleteResult, ...]:
        return tuple(r for r in self.results if r.error is not None)

    @property
    def gone(self) -> int:
        return sum(1 for r in self.results if r.error is None and not r.deleted)

    @property
    def deleted(self) -> int:
        return sum(1 for r in self.results if r.error is None and r.deleted)


def find_orphans(
    cluster: Cluster,
    *,
    namespace: str,
    created_by: str,
    now: float,
    min_age_seconds: float,
    exclude_run_id: str | None,
) -> tuple[SweepDecision, ...]:
    """List my squarepeg Pods and Jobs (scoped server-side) and classify them; raises PortError."""
    selector = sweep_selector(created_by)
    pods = cluster.list(ResourceKind.POD, namespace=namespace, label_selector=selector)
    jobs = cluster.list(ResourceKind.JOB, namespace=namespace, label_selector=selector)
    return plan_sweep(
        pods=pods,
        jobs=jobs,
        created_by=created_by,
        now=now,
        min_age_seconds=min_age_seconds,
        exclude_run_id=exclude_run_id,
    )


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


def sweep_after_run(
    cluster: Cluster,
    clock: Clock,
    notices: SweepNotices,
    *,
    namespace: str,
    created_by: str,
    min_age_seconds: float,
    exclude_run_id: str | None,
) -> SweepReport:
    """The best-effort sweep that rides along with a run: never raises, only warns."""
    try:
        decisions = find_orphans(
            cluster,
            namespace=namespace,
            created_by=created_by,
            now=clock.now(),
            min_age_seconds=min_age_seconds,
            exclude_run_id=exclude_run_id,
        )
    except PortError as exc:
        notices.warn(
            f"orphan sweep skipped: {exc} (it needs list on pods and jobs in {namespace!r}; "
            "set 'orphan_sweep: false' to turn it off)"
        )
        return SweepReport(list_error=str(exc))
    if not decisions:
        return SweepReport()
    notices.step(f"sweeping {len(decisions)} orphaned resource(s)")

    def report(result: DeleteResult) -> None:
        ref = result.decision.ref
        if result.error is not None:
            notices.warn(f"could not delete orphan {ref}: {result.error}")
        else:
            notices.detail(f"deleted orphan {ref} ({result.decision.detail})")

    results = delete_orphans(cluster, decisions, namespace=namespace, on_result=report)
    return SweepReport(decisions, results)

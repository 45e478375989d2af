"""delete_orphans: every orphan deleted once, up to `workers` at a time and never more."""

from __future__ import annotations

import threading
from typing import cast

import pytest

from pegboard.app.squarepeg.sweep import DELETE_WORKERS, delete_orphans
from pegboard.domain.errors import Forbidden
from pegboard.domain.ports.cluster import Cluster, ResourceKind
from pegboard.domain.squarepeg.orphans import OrphanCategory, SweepDecision


def decisions(count: int) -> list[SweepDecision]:
    return [
        SweepDecision(ResourceKind.POD, f"p{i}", OrphanCategory.FINISHED, 600.0, "finished")
        for i in range(count)
    ]


class GatedDeletes:
    """A cluster whose deletes wait until `gate` of them are in flight (or 2 s pass)."""

    def __init__(self, gate: int, *, refuse: str = "", gone: str = "") -> None:
        self.gate = gate
        self.refuse = refuse
        self.gone = gone
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.deleted: list[str] = []
        self.opened = threading.Event()

    def delete(self, kind: ResourceKind, name: str, *, namespace: str, propagation: str) -> bool:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if self.in_flight >= self.gate:
                self.opened.set()
        self.opened.wait(2)
        with self.lock:
            self.in_flight -= 1
            self.deleted.append(name)
        if name == self.refuse:
            raise Forbidden(f"pods {name!r} is forbidden")
        return name != self.gone


def as_cluster(deletes: GatedDeletes) -> Cluster:
    return cast(Cluster, deletes)  # the sweep only deletes


@pytest.mark.parametrize("workers", [1, 4, DELETE_WORKERS])
def test_deletes_run_up_to_the_bound_at_once(workers: int) -> None:
    cluster = GatedDeletes(gate=workers)
    todo = decisions(3 * workers + 1)
    results = delete_orphans(as_cluster(cluster), todo, namespace="ns", workers=workers)
    assert cluster.most_in_flight == workers  # the gate opened: all workers overlapped ...
    assert sorted(cluster.deleted) == sorted(d.name for d in todo)  # ... and no more than that
    assert [r.decision for r in results] == todo  # reported in the order given


def test_one_failure_or_gone_object_does_not_stop_the_others() -> None:
    cluster = GatedDeletes(gate=2, refuse="p1", gone="p2")
    results = delete_orphans(as_cluster(cluster), decisions(5), namespace="ns", workers=2)
    by_name = {r.decision.name: r for r in results}
    assert by_name["p1"].error is not None and "forbidden" in by_name["p1"].error
    assert by_name["p2"].error is None and not by_name["p2"].deleted
    assert all(by_name[n].deleted for n in ("p0", "p3", "p4"))

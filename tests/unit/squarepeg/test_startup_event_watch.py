"""Startup events are followed with one watch per involved object, not a LIST every few seconds."""

from __future__ import annotations

import io
import threading
import time

from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.app.squarepeg.startup_events import EventSurfacer
from pegboard.app.squarepeg.status import StatusUI


def wait_until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not reached"
        time.sleep(0.01)


def test_events_of_a_pending_pod_arrive_through_one_watch() -> None:
    cluster = FakeCluster(FakeClock(), auto_advance=False)
    cluster.script_pod("p", PodScript.pending())
    created = cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "main", "image": "alpine"}]},
        },
        namespace="default",
    )
    uid = created["metadata"]["uid"]
    cluster.add_event("p", "FailedScheduling", "0/3 nodes are available", type="Warning")
    err = io.StringIO()
    ui = StatusUI(tag="t", stream=err, color=False, environ={})
    surfacer = EventSurfacer(cluster, ui, startup_timeout_seconds=300)
    stop = threading.Event()
    starting = threading.Event()
    starting.set()
    surfacer.follow(
        lambda: [("p", uid)],
        namespace="default",
        still_starting=starting.is_set,
        stop=stop,
        first=0.0,
        check_every=0.01,
    )
    wait_until(lambda: "FailedScheduling: 0/3 nodes are available" in err.getvalue())
    for i in range(5):  # later events arrive on the same watch, each shown once
        cluster.add_event("p", "FailedScheduling", f"retry {i}", type="Warning")
    cluster.add_event("p", "FailedScheduling", "retry 4", type="Warning")  # a repeat
    wait_until(lambda: "retry 4" in err.getvalue())
    time.sleep(0.1)  # several target checks later: still one watch, never a LIST
    operations = [r.operation for r in cluster.requests]
    assert operations.count("watch_events") == 1
    assert "list_events" not in operations
    assert err.getvalue().count("retry 4") == 1
    starting.clear()
    stop.set()
    cluster.add_event("p", "Scheduled", "wakes the watch so it sees the end")

from __future__ import annotations

from typing import Any

import pytest

from pegboard.domain.kubernetes.pod_start import (
    FAIL_FAST_REASONS,
    Startup,
    events_to_surface,
    looks_blocked,
    startup_state,
    stuck_container,
)


def waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}


def pending(*statuses: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Pending", "containerStatuses": list(statuses)}
    if init:
        status["initContainerStatuses"] = list(init)
    return {"status": status}


@pytest.mark.parametrize("reason", sorted(FAIL_FAST_REASONS))
def test_each_seed_reason_fails_fast_on_the_app_container(reason: str) -> None:
    pod = pending(waiting("main", reason, "boom"))
    assert startup_state(pod, "main") is Startup.FAILED
    stuck = stuck_container(pod)
    assert stuck is not None and stuck.reason == reason and not stuck.init
    assert reason in stuck.describe() and "boom" in stuck.describe()


def test_an_init_container_with_a_bad_image_fails_fast_too() -> None:
    pod = pending(
        waiting("main", "PodInitializing"), init=(waiting("setup", "ImagePullBackOff", "nope"),)
    )
    assert startup_state(pod, "main") is Startup.FAILED
    stuck = stuck_container(pod)
    assert stuck is not None and stuck.init and stuck.container == "setup"
    assert "init container 'setup'" in stuck.describe()


@pytest.mark.parametrize("reason", ["ContainerCreating", "PodInitializing", "Pulling"])
def test_slow_starts_keep_waiting(reason: str) -> None:
    assert startup_state(pending(waiting("main", reason)), "main") is Startup.WAITING


def test_started_when_running_or_terminated_or_terminal_phase() -> None:
    running = {
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "main", "state": {"running": {}}}],
        }
    }
    assert startup_state(running, "main") is Startup.STARTED
    done = {
        "status": {
            "phase": "Pending",
            "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 0}}}],
        }
    }
    assert startup_state(done, "main") is Startup.STARTED
    assert startup_state({"status": {"phase": "Failed"}}, "main") is Startup.STARTED


def test_our_container_waiting_while_a_sidecar_runs_is_not_started() -> None:
    pod = {
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "sidecar", "state": {"running": {}}},
                waiting("main", "ContainerCreating"),
            ],
        }
    }
    assert startup_state(pod, "main") is Startup.WAITING


def test_looks_blocked() -> None:
    unschedulable = {
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
    }
    assert looks_blocked(unschedulable)
    assert not looks_blocked(pending(waiting("main", "ContainerCreating")))
    assert looks_blocked(pending(waiting("main", "ErrImagePull")))


def event(
    name: str,
    uid: str,
    reason: str,
    message: str,
    type: str = "Warning",
    ts: str = "2024-01-01T00:00:01Z",
) -> dict[str, Any]:
    return {
        "involvedObject": {"name": name, "uid": uid},
        "reason": reason,
        "message": message,
        "type": type,
        "lastTimestamp": ts,
    }


def test_events_scoped_by_name_and_uid_shown_once_each() -> None:
    events = [
        event("p", "old-uid", "FailedScheduling", "from an earlier pod of the same name"),
        event("p", "uid-1", "FailedScheduling", "0/3 nodes", ts="2024-01-01T00:00:05Z"),
        event("p", "uid-1", "FailedScheduling", "0/3 nodes", ts="2024-01-01T00:00:06Z"),
        event("p", "uid-1", "Scheduled", "assigned", type="Normal"),
        event("q", "uid-1", "FailedMount", "other object"),
        event("p", "uid-1", "FailedMount", "pvc unbound", ts="2024-01-01T00:00:02Z"),
    ]
    notices = events_to_surface(
        events, involved_name="p", involved_uid="uid-1", already_shown=frozenset()
    )
    assert [(n.reason, n.message) for n in notices] == [
        ("FailedMount", "pvc unbound"),
        ("FailedScheduling", "0/3 nodes"),
    ]
    again = events_to_surface(
        events,
        involved_name="p",
        involved_uid="uid-1",
        already_shown=frozenset(n.key for n in notices),
    )
    assert again == ()
    everything = events_to_surface(
        events,
        involved_name="p",
        involved_uid="uid-1",
        already_shown=frozenset(),
        warnings_only=False,
    )
    assert ("Scheduled", "assigned") in [(n.reason, n.message) for n in everything]

from __future__ import annotations

from typing import Any

import pytest

from pegboard.domain.kubernetes import labels
from pegboard.domain.kubernetes.timestamps import format_age, parse_rfc3339_seconds
from pegboard.domain.squarepeg.orphans import OrphanCategory, plan_sweep, sweep_selector

NOW = parse_rfc3339_seconds("2024-01-01T12:00:00Z") or 0.0
ME = "jane"


def meta(
    name: str,
    *,
    created: str = "2024-01-01T10:00:00Z",
    run_id: str = "r1",
    user: str = ME,
    keep: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    own = labels.own_labels(run_id=run_id, created_by=user, keep=keep)
    return {"name": name, "creationTimestamp": created, "labels": own, **extra}


def pod(
    name: str, phase: str, *, statuses: list[dict[str, Any]] | None = None, **meta_args: Any
) -> dict[str, Any]:
    return {
        "metadata": meta(name, **meta_args),
        "status": {"phase": phase, "containerStatuses": statuses or []},
    }


def finished_at(ts: str) -> list[dict[str, Any]]:
    return [{"name": "main", "state": {"terminated": {"exitCode": 0, "finishedAt": ts}}}]


def stuck(reason: str = "ImagePullBackOff") -> list[dict[str, Any]]:
    return [{"name": "main", "state": {"waiting": {"reason": reason}}}]


def plan(
    pods: list[dict[str, Any]] | None = None,
    jobs: list[dict[str, Any]] | None = None,
    min_age: float = 300,
    exclude: str | None = "current",
) -> dict[str, tuple[OrphanCategory, str]]:
    decisions = plan_sweep(
        pods=pods or [],
        jobs=jobs or [],
        created_by=ME,
        now=NOW,
        min_age_seconds=min_age,
        exclude_run_id=exclude,
    )
    return {d.ref: (d.category, d.detail) for d in decisions}


def test_selector_is_scoped_server_side() -> None:
    assert sweep_selector("jane") == (
        "app.kubernetes.io/managed-by=squarepeg,squarepeg.io/created-by=jane,!squarepeg.io/keep"
    )


def test_finished_pods_aged_from_finished_at() -> None:
    result = plan(
        [
            pod("old", "Succeeded", statuses=finished_at("2024-01-01T11:50:00Z")),
            pod("fresh", "Failed", statuses=finished_at("2024-01-01T11:58:00Z")),
        ]
    )
    assert result == {"pod/old": (OrphanCategory.FINISHED, "succeeded 10m ago")}


def test_finished_without_finished_at_falls_back_to_creation() -> None:
    assert "pod/p" in plan([pod("p", "Failed")])


@pytest.mark.parametrize("phase", ["Running", "Unknown", "Pending"])
def test_never_running_unknown_or_plain_pending_at_any_age(phase: str) -> None:
    assert plan([pod("p", phase, created="2020-01-01T00:00:00Z")]) == {}


def test_stuck_pods_aged_from_creation() -> None:
    result = plan(
        [
            pod("typo", "Pending", statuses=stuck(), created="2024-01-01T08:46:00Z"),
            pod("young", "Pending", statuses=stuck(), created="2024-01-01T11:59:00Z"),
            pod(
                "slow",
                "Pending",
                statuses=stuck("ContainerCreating"),
                created="2020-01-01T00:00:00Z",
            ),
        ]
    )
    assert result == {"pod/typo": (OrphanCategory.STUCK, "ImagePullBackOff for 3h14m")}


def test_stuck_init_container_counts() -> None:
    p = pod("p", "Pending")
    p["status"]["initContainerStatuses"] = stuck("ErrImagePull")
    assert plan([p])["pod/p"][0] is OrphanCategory.STUCK


def test_keep_other_users_and_current_run_are_exempt() -> None:
    result = plan(
        [
            pod("kept", "Succeeded", keep=True),
            pod("theirs", "Succeeded", user="bob"),
            pod("mine-now", "Succeeded", run_id="current"),
            pod("mine-old", "Succeeded"),
        ]
    )
    assert list(result) == ["pod/mine-old"]


def test_clean_excludes_no_run() -> None:
    assert "pod/mine-now" in plan([pod("mine-now", "Succeeded", run_id="current")], exclude=None)


def job(
    name: str, conditions: list[dict[str, Any]] | None = None, **meta_args: Any
) -> dict[str, Any]:
    return {"metadata": meta(name, **meta_args), "status": {"conditions": conditions or []}}


def child(
    job_name: str, phase: str, statuses: list[dict[str, Any]], created: str = "2024-01-01T10:00:00Z"
) -> dict[str, Any]:
    p = pod(f"{job_name}-x1", phase, statuses=statuses, created=created)
    p["metadata"]["labels"]["job-name"] = job_name
    p["metadata"]["ownerReferences"] = [{"kind": "Job", "name": job_name}]
    return p


def test_jobs_by_condition_aged_from_last_transition() -> None:
    result = plan(
        jobs=[
            job(
                "done",
                [
                    {
                        "type": "Complete",
                        "status": "True",
                        "lastTransitionTime": "2024-01-01T11:00:00Z",
                    }
                ],
            ),
            job(
                "failed",
                [
                    {
                        "type": "Failed",
                        "status": "True",
                        "lastTransitionTime": "2024-01-01T11:59:00Z",
                    }
                ],
            ),
            job("running"),
        ]
    )
    assert result == {"job/done": (OrphanCategory.FINISHED, "complete 1h ago")}


def test_job_owned_pods_are_never_deleted_directly() -> None:
    pods = [child("done", "Succeeded", finished_at("2024-01-01T10:00:00Z"))]
    result = plan(
        pods,
        jobs=[
            job(
                "done",
                [
                    {
                        "type": "Complete",
                        "status": "True",
                        "lastTransitionTime": "2024-01-01T10:00:00Z",
                    }
                ],
            )
        ],
    )
    assert list(result) == ["job/done"]


def test_a_job_without_condition_is_judged_by_its_stuck_child() -> None:
    pods = [child("j", "Pending", stuck(), created="2024-01-01T09:00:00Z")]
    assert plan(pods, jobs=[job("j")]) == {
        "job/j": (OrphanCategory.STUCK, "ImagePullBackOff for 3h")
    }
    slow = [child("j", "Pending", stuck("ContainerCreating"), created="2020-01-01T00:00:00Z")]
    assert plan(slow, jobs=[job("j")]) == {}


def test_min_age_zero_takes_everything_finished() -> None:
    assert "pod/p" in plan(
        [pod("p", "Succeeded", statuses=finished_at("2024-01-01T12:00:00Z"))], min_age=0
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (60, "1m"),
        (612, "10m12s"),
        (3600, "1h"),
        (11640, "3h14m"),
        (190800, "2d5h"),
    ],
)
def test_format_age(seconds: float, text: str) -> None:
    assert format_age(seconds) == text


def held(until: str) -> dict[str, Any]:
    return {"annotations": {labels.RUNNER_ALIVE_UNTIL: until}}


def test_a_finished_pod_whose_runner_is_alive_is_never_swept() -> None:
    # Issue 7 item 2: a live runner may still be reading the log, which goes with the pod.
    result = plan(
        [
            pod("read-now", "Succeeded", **held("2024-01-01T12:01:30Z")),
            pod("runner-died", "Succeeded", **held("2024-01-01T11:59:59Z")),
            pod("stuck-read", "Pending", statuses=stuck(), **held("2024-01-01T12:00:01Z")),
            pod("garbled", "Failed", **held("soon")),
        ],
        min_age=0,
    )
    assert sorted(result) == ["pod/garbled", "pod/runner-died"]


def test_a_job_whose_runner_is_alive_is_never_swept() -> None:
    done = {"conditions": [{"type": "Complete", "status": "True"}]}
    jobs = [
        {"metadata": meta("live", **held("2024-01-01T12:00:30Z")), "status": done},
        {"metadata": meta("dead", **held("2024-01-01T11:00:00Z")), "status": done},
    ]
    assert list(plan(jobs=jobs, min_age=0)) == ["job/dead"]

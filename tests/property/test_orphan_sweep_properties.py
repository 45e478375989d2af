"""Properties of the orphan sweep policy (plan_sweep) over generated namespaces."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.kubernetes import labels
from pegboard.domain.squarepeg.orphans import JOB_NAME_LABEL, plan_sweep
from pegboard.domain.squarepeg.runner_heartbeat import alive_until_value, held_by_live_runner

NOW = 1_700_000_000.0
ME = "jane"


def stamp(offset: float) -> str:
    return alive_until_value(NOW + offset, 0)


@st.composite
def resources(draw: st.DrawFn, kind: str, index: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"{kind.lower()}-{index}",
        "creationTimestamp": stamp(-draw(st.integers(0, 4000))),
        "labels": labels.own_labels(
            run_id=draw(st.sampled_from(["r1", "r2", "current"])),
            created_by=draw(st.sampled_from([ME, "bob"])),
            keep=draw(st.booleans()),
        ),
    }
    if draw(st.booleans()):
        meta["labels"].pop(labels.MANAGED_BY)
    hold = draw(st.none() | st.integers(-4000, 4000))
    if hold is not None:
        meta["annotations"] = {labels.RUNNER_ALIVE_UNTIL: stamp(hold)}
    if kind == "Job":
        conditions = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "type": st.sampled_from(["Complete", "Failed", "Suspended"]),
                        "status": st.sampled_from(["True", "False"]),
                        "lastTransitionTime": st.integers(0, 4000).map(lambda s: stamp(-s)),
                    }
                ),
                max_size=2,
            )
        )
        return {"kind": "Job", "metadata": meta, "status": {"conditions": conditions}}
    if draw(st.booleans()):
        meta["labels"][JOB_NAME_LABEL] = "job-0"
    phase = draw(st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"]))
    state = draw(
        st.sampled_from(
            [
                {},
                {"waiting": {"reason": "ImagePullBackOff"}},
                {"waiting": {"reason": "ContainerCreating"}},
                {"terminated": {"exitCode": 0, "finishedAt": stamp(-draw(st.integers(0, 4000)))}},
            ]
        )
    )
    return {
        "kind": "Pod",
        "metadata": meta,
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "state": state}]},
    }


@st.composite
def namespaces(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pods = [draw(resources("Pod", i)) for i in range(draw(st.integers(0, 8)))]
    jobs = [draw(resources("Job", i)) for i in range(draw(st.integers(0, 4)))]
    return pods, jobs


@given(namespaces(), st.sampled_from([0, 60, 300, 3600]))
def test_the_sweep_never_touches_what_is_not_an_orphan_of_mine(
    namespace: tuple[list[dict[str, Any]], list[dict[str, Any]]], min_age: int
) -> None:
    pods, jobs = namespace
    decisions = plan_sweep(
        pods=pods,
        jobs=jobs,
        created_by=ME,
        now=NOW,
        min_age_seconds=min_age,
        exclude_run_id="current",
    )
    by_ref = {f"{o['kind'].lower()}/{o['metadata']['name']}": o for o in [*pods, *jobs]}
    refs = [d.ref for d in decisions]
    assert len(refs) == len(set(refs))
    for decision in decisions:
        obj = by_ref[decision.ref]
        own = obj["metadata"]["labels"]
        assert own.get(labels.MANAGED_BY) == labels.MANAGED_BY_VALUE
        assert own[labels.CREATED_BY] == ME and labels.KEEP not in own
        assert own[labels.RUN_ID] != "current"
        assert not held_by_live_runner(obj, now=NOW)  # a live runner may be reading it
        assert decision.age_seconds >= min_age
        if obj["kind"] == "Pod":
            assert JOB_NAME_LABEL not in own  # a Job's pod goes with its Job, never alone
            assert obj["status"]["phase"] in ("Succeeded", "Failed", "Pending")


@given(namespaces())
def test_a_higher_minimum_age_only_ever_spares_more(
    namespace: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    pods, jobs = namespace

    def refs(min_age: int) -> set[str]:
        return {
            d.ref
            for d in plan_sweep(
                pods=pods, jobs=jobs, created_by=ME, now=NOW, min_age_seconds=min_age
            )
        }

    assert refs(3600) <= refs(300) <= refs(0)

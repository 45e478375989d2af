"""A create that fails after it may have made a pod (5xx, timeout, bad answer), on the fakes:
the pod is looked up by name with a bounded wait (on the fake clock) before anything else is
created; the end of the run looks again and deletes or records what turned up; the manifest
and the run's pointer name every pod the run made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.gpujob_run import RunHarness, lag_the_listing
from pegboard.adapters.fakes import FakeJob
from pegboard.domain.errors import NoCandidateHelps, Transient, Unauthorized
from pegboard.domain.ports.gpu_cloud import CreateOutcomeUnknown

GOOD_JOB = FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0)


def _good(h: RunHarness) -> None:
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b"{}")


def _creates(h: RunHarness) -> int:
    return [call[0] for call in h.cloud.calls].count("create_pod")


def _run_pointers(h: RunHarness) -> dict[str, dict[str, Any]]:
    runs = h.root / "home" / ".local" / "state" / "runpod-deploy" / "runs"
    if not runs.exists():
        return {}
    return {str(p): json.loads(p.read_text()) for p in runs.glob("*.json")}


def test_a_lookup_that_fails_for_a_while_still_finds_the_pod_and_creates_no_second(
    tmp_path: Path,
) -> None:
    # The case: 5xx after the pod exists, and the first lookups by name fail too.
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create_after_pod_exists()
    h.cloud.fail_next("find_pods", Transient("503 from the API"), times=4)
    started = h.clock.monotonic()
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    assert _creates(h) == 1 and len(h.cloud.pods) == 1 and not h.cloud.live_pods()
    manifest = h.manifest(result)
    (pod_id,) = h.cloud.pods
    assert manifest["pods_created"] == [pod_id] and manifest["pod_id"] == pod_id
    assert manifest["pod_name"] == h.cloud.pods[pod_id].request.name
    assert h.clock.monotonic() - started < 60  # the wait backs off, bounded


def test_a_lookup_that_never_answers_creates_nothing_else_and_records_the_name(
    tmp_path: Path,
) -> None:
    h = RunHarness(tmp_path)
    h.cloud.fail_create_after_pod_exists()
    h.cloud.fail_next("find_pods", Transient("503 from the API"), times=10_000)
    result = h.run()
    assert result.exit_code == 1
    assert _creates(h) == 1  # never a second create while the first may have made a pod
    manifest = h.manifest(result)
    assert manifest["failure_phase"] == "provision"
    assert "no other pod is created" in manifest["failure_reason"]
    name = manifest["pod_name"]
    assert name in manifest["left_behind"] and "ls-stale" in manifest["left_behind"]
    (pointer,) = _run_pointers(h).values()
    assert pointer["pod_id"] is None and pointer["pod_name"] == name
    assert pointer["status"] == "CREATE_UNSETTLED"
    (pod,) = h.cloud.live_pods()  # it is there, and the pointer names it by name
    assert pod.request.name == name


def test_a_pod_that_turns_up_at_the_end_is_deleted(tmp_path: Path) -> None:
    # The lookups during provision never answer; by the end of the run the API is back.
    h = RunHarness(tmp_path)
    h.cloud.fail_create_after_pod_exists()
    timing = h.deps().timing
    polls = 0
    while sum(timing.ready_poll.delay(n) for n in range(1, polls + 1)) < (
        timing.create_lookup_timeout_sec
    ):
        polls += 1
    h.cloud.fail_next("find_pods", Transient("503"), times=polls + 1)
    result = h.run()
    assert result.exit_code == 1 and _creates(h) == 1
    assert not h.cloud.live_pods()  # found by the last look, deleted
    manifest = h.manifest(result)
    assert manifest["pods_created"] == list(h.cloud.pods)
    assert not manifest["left_behind"]
    assert _run_pointers(h) == {}  # nothing may exist any more


def test_a_confirmed_absent_pod_moves_on_and_a_late_twin_is_deleted(tmp_path: Path) -> None:
    # First create: 5xx and no pod (the lookup says so): the next candidate is tried.
    # Second create: the pod exists although the call failed, and the lookup finds it.
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create(error=CreateOutcomeUnknown("timed out"))
    h.cloud.fail_create_after_pod_exists()
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    assert _creates(h) == 2 and len(h.cloud.pods) == 1 and not h.cloud.live_pods()


def test_a_pod_the_lookup_missed_is_deleted_at_the_end_and_named(tmp_path: Path) -> None:
    # The first create made a pod but failed, and the lookup did not list it yet (so the run
    # moved on and the next create succeeded): the last look finds the twin and deletes it.
    h = RunHarness(tmp_path, config={"lifecycle": {"on_success": "stop", "on_failure": "stop"}})
    _good(h)
    h.cloud.fail_create_after_pod_exists()
    real_find = h.cloud.find_pods
    answers: list[list[Any]] = [[]]  # the first lookup misses it

    def find_pods(*, name: str) -> list[Any]:
        return answers.pop() if answers else real_find(name=name)

    h.cloud.find_pods = find_pods  # type: ignore[method-assign]
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    manifest = h.manifest(result)
    twin, used = sorted(h.cloud.pods)
    assert manifest["pod_id"] == used and manifest["pods_created"] == [used, twin]
    assert h.cloud.pods[twin].status == "TERMINATED"  # deleted: nothing ran on it
    assert h.cloud.pods[used].status == "EXITED"  # stopped, as on_success says
    events = [e["event"] for e in h.events(result)]
    assert "surplus_pod_deleted" in events


def test_a_twin_that_cannot_be_deleted_is_named_with_its_release(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create_after_pod_exists()
    real_find = h.cloud.find_pods
    answers: list[list[Any]] = [[]]

    def find_pods(*, name: str) -> list[Any]:
        return answers.pop() if answers else real_find(name=name)

    h.cloud.find_pods = find_pods  # type: ignore[method-assign]
    h.cloud.fail_next(
        "terminate_pod", Transient("503"), times=1, when=lambda c: c.args == ("fakepod-0001",)
    )
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    manifest = h.manifest(result)
    assert (twin := "fakepod-0001") in [p.pod_id for p in h.cloud.live_pods()]
    assert f"cleanup --pod-id {twin} --provider fake --mode delete" in manifest["left_behind"]
    (pointer,) = _run_pointers(h).values()  # the used pod is deleted; its name stays recorded
    assert pointer["pod_id"] is None and pointer["other_pod_ids"] == [twin]


def test_a_refusal_no_other_candidate_would_answer_differently_stops_the_walk(
    tmp_path: Path,
) -> None:
    # RunPod's 402 (no balance) or a GraphQL API that is gone: the same answer for every GPU
    # type and datacenter, so the run stops at the first instead of asking all four.
    h = RunHarness(tmp_path)
    h.cloud.fail_next("create_pod", NoCandidateHelps("insufficient balance", status=402), times=4)
    result = h.run()
    assert result.exit_code == 1
    assert _creates(h) == 1 and not h.cloud.pods
    assert "refused for every candidate alike" in h.manifest(result)["failure_reason"]


def test_a_rejected_api_key_stops_the_walk_too(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    h.cloud.fail_next("create_pod", Unauthorized("API key rejected", status=401), times=4)
    result = h.run()
    assert result.exit_code != 0
    assert _creates(h) == 1 and not h.cloud.pods


def test_the_last_look_waits_for_every_unseen_create_not_only_the_first(tmp_path: Path) -> None:
    # The property test's falsifying example: two creates make a pod each and fail, neither
    # lookup lists it yet, the third create works. The last look saw the first twin and
    # stopped there, so the second one (fakepod-0002) stayed live and unrecorded.
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create_after_pod_exists()
    h.cloud.fail_create_after_pod_exists()
    lag_the_listing(h, 3.0)
    h.cloud.fail_next("find_pods", Transient("503"), times=2)
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    assert _creates(h) == 3
    assert not h.cloud.live_pods(), h.manifest(result)
    manifest = h.manifest(result)
    assert sorted(manifest["pods_created"]) == sorted(h.cloud.pods)
    assert not manifest["left_behind"]


def test_a_lookup_that_finds_an_earlier_creates_pod_still_waits_for_the_later_one(
    tmp_path: Path,
) -> None:
    # Create 1 makes fakepod-0001 and fails; its lookup misses it (listing lag). Create 2
    # makes fakepod-0002 and fails; its lookup, later, lists fakepod-0001 only. The run adopts
    # fakepod-0001, but fakepod-0002 may still be on its way: the last look waits for it.
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create_after_pod_exists()
    h.cloud.fail_create_after_pod_exists()
    lag_the_listing(h, 3.0)
    real_create = h.cloud.create_pod

    def create_pod(request: Any) -> Any:
        if h.cloud.pods:  # the second create happens 3 s after the first
            h.clock.sleep(3.0)
        return real_create(request)

    h.cloud.create_pod = create_pod  # type: ignore[method-assign]
    result = h.run()
    assert result.exit_code == 0, result.failure_reason
    manifest = h.manifest(result)
    assert _creates(h) == 2 and manifest["pod_id"] == "fakepod-0001"
    assert not h.cloud.live_pods(), manifest
    assert sorted(manifest["pods_created"]) == ["fakepod-0001", "fakepod-0002"]

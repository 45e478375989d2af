"""The RunPod create path under random faults, on the fakes: every create attempt answers ok,
no capacity, a 5xx/timeout after the pod exists, or one before it does; lookups by name fail
for a while or miss a pod that exists; deletes fail now and then. After every run, every pod
the cloud holds is deleted, or named in the manifest and listed by `ls-stale` with a release
command that works (run here as printed, through the use cases the CLI calls)."""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.gpujob_run import RunHarness, lag_the_listing
from helpers.runpod_container import pod_command_deps_with
from pegboard.adapters.fakes import FakeJob
from pegboard.app.runpod_deploy.pod_access import PodCommandDeps
from pegboard.app.runpod_deploy.pod_release import PointerCleanup, cleanup_pod_id, cleanup_pointer
from pegboard.app.runpod_deploy.run_types import Backend
from pegboard.app.runpod_deploy.stale_pods import list_stale
from pegboard.domain.errors import Transient
from pegboard.domain.ports.gpu_cloud import POD_TERMINATED, CreateOutcomeUnknown, NoCapacity

GOOD_JOB = FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0)
ATTEMPTS = st.lists(
    st.sampled_from(["ok", "no_capacity", "5xx_after_pod", "5xx_before_pod", "timeout"]),
    min_size=1,
    max_size=4,
)


@st.composite
def faults(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "attempts": draw(ATTEMPTS),
        "lookup_failures": draw(st.integers(0, 60)),
        "listing_lag_sec": draw(st.sampled_from([0.0, 0.0, 3.0, 9.0])),
        "terminate_failures": draw(st.integers(0, 2)),
        "on_success": draw(st.sampled_from(["delete", "stop"])),
    }


def _arrange(h: RunHarness, f: dict[str, Any], healed: list[bool]) -> None:
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b"{}")
    for outcome in f["attempts"]:
        if outcome == "ok":
            break  # the next create goes through
        if outcome == "no_capacity":
            h.cloud.fail_create(error=NoCapacity("sold out"))
        elif outcome == "5xx_after_pod":
            h.cloud.fail_create_after_pod_exists()
        elif outcome == "5xx_before_pod":
            h.cloud.fail_create(error=CreateOutcomeUnknown("502 Bad Gateway"))
        else:
            h.cloud.fail_create(error=CreateOutcomeUnknown("read timed out"))
    sick = lambda _call: not healed[0]  # noqa: E731  (the API is healthy again for releases)
    if f["lookup_failures"]:
        h.cloud.fail_next("find_pods", Transient("503"), times=f["lookup_failures"], when=sick)
    if f["terminate_failures"]:
        h.cloud.fail_next(
            "terminate_pod", Transient("503"), times=f["terminate_failures"], when=sick
        )
    lag_the_listing(h, f["listing_lag_sec"], until=lambda: healed[0])


def _pod_deps(h: RunHarness) -> PodCommandDeps:
    def backend_for(provider: str) -> Backend:
        return Backend(cloud=h.cloud, open_shell=h.open_shell, open_sync=lambda s: h.sync)

    return pod_command_deps_with(
        backend_for=backend_for,
        clock=h.clock,
        home=str(h.root / "home"),
        environ={},
        random_hex=lambda: "abc123",
        out=h.lines.append,
        out_bytes=lambda _b: None,
        ask=lambda _p: "n",
    )


def _release(deps: PodCommandDeps, command: str) -> int:
    argv = shlex.split(command)
    assert argv[:2] == ["runpod-deploy", "cleanup"], command
    flags = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert flags["--mode"] == "delete"
    request = PointerCleanup(
        Path(flags["--state-file"]) if "--state-file" in flags else None,
        expect_pod_id=flags["--pod-id"],
    )
    if request.state_file is not None:
        return cleanup_pointer(request, deps)
    return cleanup_pod_id(request, flags["--provider"], deps)


def _check_nothing_unaccounted(h: RunHarness, manifest: dict[str, Any]) -> None:
    live = [pod for pod in h.cloud.pods.values() if pod.status != POD_TERMINATED]
    named = set(manifest["pods_created"]) | {manifest["pod_id"]}
    for pod in live:
        by_id = pod.pod_id in named
        by_name = pod.request.name == manifest["pod_name"] and (
            manifest["pod_name"] in (manifest["left_behind"] or "")
        )
        assert by_id or by_name, (pod.pod_id, manifest)
    deps = _pod_deps(h)
    h.lines.clear()
    assert list_stale(provider="fake", output="json", deps=deps) == 0
    listed = {row["pod_id"]: row for row in json.loads(h.lines[-1])["pods"]}
    assert {pod.pod_id for pod in live} <= set(listed)
    for pod in live:
        assert _release(deps, listed[pod.pod_id]["release"]) == 0
        assert h.cloud.pods[pod.pod_id].status == POD_TERMINATED, listed[pod.pod_id]


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(f=faults())
# Found by this test: two creates each made a pod and failed while the listing lagged; the
# last look stopped at the first twin it saw, and fakepod-0002 stayed live, unrecorded.
@example(
    f={
        "attempts": ["5xx_after_pod", "5xx_after_pod"],
        "lookup_failures": 2,
        "listing_lag_sec": 3.0,
        "terminate_failures": 0,
        "on_success": "delete",
    }
)
def test_every_pod_is_deleted_or_named_and_releasable(f: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as root:
        h = RunHarness(
            Path(root), config={"lifecycle": {"on_success": f["on_success"], "on_failure": "stop"}}
        )
        healed = [False]
        _arrange(h, f, healed)
        result = h.run()
        healed[0] = True
        manifest = h.manifest(result)
        creates = [c[0] for c in h.cloud.calls].count("create_pod")
        # Never a create while an earlier one's outcome is unknown: a create whose lookup never
        # answered is the last one.
        if "no other pod is created" in (manifest["failure_reason"] or ""):
            assert f["attempts"][creates - 1] in {"5xx_after_pod", "5xx_before_pod", "timeout"}
        if result.exit_code == 0 and not f["terminate_failures"]:
            # A successful run leaves at most the pod it was told to keep.
            live = [p.pod_id for p in h.cloud.live_pods()]
            assert live == ([manifest["pod_id"]] if f["on_success"] == "stop" else []), manifest
        _check_nothing_unaccounted(h, manifest)

"""RunPodGpuCloud (REST v2, GraphQL for spot) against each fault knob of the RunPod API sandbox,
plus the key and transport failures: every one arrives as the PortError the app handles."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path

import pytest

from helpers.runpod_sandbox import SleepRecorder
from pegboard.adapters.runpod import RunPodGpuCloud
from pegboard.adapters.sandboxes.runpod import NetworkVolume as SandboxVolume
from pegboard.adapters.sandboxes.runpod import RunPodSandbox, StockOut
from pegboard.adapters.sandboxes.runpod.faults import Throttle
from pegboard.domain.errors import NotFound, Transient, Unauthorized, Unreachable
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    POD_STARTING,
    AmbiguousVolume,
    CreateOutcomeUnknown,
    NetworkVolume,
    NoCapacity,
    PodRequest,
    PodStatus,
)

A4000, A5000 = "NVIDIA RTX A4000", "NVIDIA RTX A5000"


def request(name: str = "run-1", gpu: str = A4000, dc: str = "EU-RO-1", **kw: object) -> PodRequest:
    fields: dict[str, object] = {"volume_gb": 20, **kw}
    return PodRequest(name=name, image="img:1", gpu_id=gpu, datacenter_id=dc, **fields)  # type: ignore[arg-type]


def wait_for(cloud: RunPodGpuCloud, pod_id: str, ready: bool, budget: float = 10.0) -> PodStatus:
    deadline = time.monotonic() + budget
    while True:
        status = cloud.get_pod(pod_id)
        if status.ready == ready or time.monotonic() > deadline:
            return status
        time.sleep(0.02)


def test_stock_out_at_create_is_no_capacity_and_the_next_candidate_works(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    runpod_sandbox.faults.stock_out_at_create.append(StockOut(A4000, "EU-RO-1"))
    listed = runpod_cloud.gpu_availability(
        gpu_ids=[A4000], datacenter_ids=["EU-RO-1"], cloud_type="SECURE"
    )
    assert listed[0].available  # the listing said yes; create says no (runpodctl#189)
    with pytest.raises(NoCapacity, match="no longer any instances"):
        runpod_cloud.create_pod(request())
    assert runpod_sandbox.pods() == []
    handle = runpod_cloud.create_pod(request(gpu=A5000))
    assert runpod_cloud.get_pod(handle.pod_id).gpu_id == A5000


def test_listed_stock_out_is_none_and_create_there_is_no_capacity(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    runpod_sandbox.catalog.set_stock(A4000, "EU-RO-1", None)
    runpod_sandbox.catalog.set_stock(A5000, "EU-RO-1", "low")
    stock = runpod_cloud.gpu_availability(
        gpu_ids=[A4000, A5000], datacenter_ids=["EU-RO-1"], cloud_type="SECURE"
    )
    assert [(s.gpu_id, s.stock) for s in stock] == [(A4000, "none"), (A5000, "low")]
    with pytest.raises(NoCapacity):
        runpod_cloud.create_pod(request())


def test_a_5xx_after_the_pod_exists_is_outcome_unknown_and_the_pod_is_found_by_name(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    runpod_sandbox.faults.create_5xx_after_pod_exists = 1
    with pytest.raises(CreateOutcomeUnknown, match="look it up by name 'run-5xx'") as caught:
        runpod_cloud.create_pod(request("run-5xx"))
    assert "\n" not in str(caught.value)
    found = runpod_cloud.find_pods(name="run-5xx")
    assert [p.pod_id for p in found] == [p.id for p in runpod_sandbox.pods()]
    runpod_cloud.terminate_pod(found[0].pod_id)
    assert runpod_sandbox.pods() == []


def test_slow_ssh_is_starting_until_the_port_is_published(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    runpod_sandbox.faults.ssh_ready_delay_sec = 0.3
    handle = runpod_cloud.create_pod(request())
    first = runpod_cloud.get_pod(handle.pod_id)
    assert (first.desired_status, first.access, first.ready) == (POD_STARTING, None, False)
    ready = wait_for(runpod_cloud, handle.pod_id, ready=True)
    assert ready.desired_status == POD_RUNNING and ready.access is not None
    assert ready.access.host == "127.0.0.1" and ready.access.user == "root"


def test_never_ready_ssh_stays_starting_and_terminates_cleanly(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    runpod_sandbox.faults.ssh_never_ready = True
    handle = runpod_cloud.create_pod(request())
    status = runpod_cloud.get_pod(handle.pod_id)
    assert status.desired_status == POD_STARTING and not status.ready
    assert [p.desired_status for p in runpod_cloud.list_pods()] == [POD_STARTING]
    runpod_cloud.terminate_pod(handle.pod_id)
    with pytest.raises(NotFound):
        runpod_cloud.get_pod(handle.pod_id)


def test_resume_without_free_gpus_is_no_capacity_and_the_pod_stays_stopped(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    handle = runpod_cloud.create_pod(request())
    runpod_cloud.stop_pod(handle.pod_id)
    stopped = runpod_cloud.get_pod(handle.pod_id)
    assert stopped.desired_status == POD_EXITED and stopped.cost_per_hour_usd == 0.0
    runpod_sandbox.faults.resume_without_free_gpus = 1
    with pytest.raises(NoCapacity, match="not enough free GPUs"):
        runpod_cloud.resume_pod(handle.pod_id)
    assert runpod_cloud.get_pod(handle.pod_id).desired_status == POD_EXITED
    runpod_cloud.resume_pod(handle.pod_id)
    assert wait_for(runpod_cloud, handle.pod_id, ready=True).ready


def test_reads_retry_a_5xx_with_backoff_then_succeed(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud, sleeps: SleepRecorder
) -> None:
    handle = runpod_cloud.create_pod(request())
    runpod_sandbox.faults.http_503["getPod"] = 2
    assert runpod_cloud.get_pod(handle.pod_id).pod_id == handle.pod_id
    assert sleeps == [0.5, 1.0]


def test_retries_are_bounded(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud, sleeps: SleepRecorder
) -> None:
    runpod_sandbox.faults.http_503["listPods"] = 10
    with pytest.raises(Transient, match=r"list pods: .*HTTP 503"):
        runpod_cloud.list_pods()
    assert len(sleeps) == 2  # three attempts in all
    assert runpod_sandbox.faults.http_503["listPods"] == 7


def test_stop_and_terminate_retry_too_but_create_is_never_repeated(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    handle = runpod_cloud.create_pod(request())
    runpod_sandbox.faults.http_503.update({"podAction": 1, "deletePod": 1})
    runpod_cloud.stop_pod(handle.pod_id)
    runpod_cloud.terminate_pod(handle.pod_id)
    assert runpod_sandbox.pods() == []
    runpod_sandbox.faults.http_503["createPod"] = 1
    with pytest.raises(CreateOutcomeUnknown):
        runpod_cloud.create_pod(request("once"))
    creates = [r for r in runpod_sandbox.received_v2 if r.operation_id == "createPod"]
    assert len(creates) == 2  # the first test create, and exactly one for "once"


def test_a_429_waits_for_retry_after_in_one_line_then_goes_on(
    runpod_sandbox: RunPodSandbox,
    runpod_cloud: RunPodGpuCloud,
    sleeps: SleepRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    runpod_sandbox.faults.throttle.append(Throttle("createPod", times=1, retry_after_sec=3))
    with caplog.at_level(logging.WARNING):
        handle = runpod_cloud.create_pod(request("throttled"))
    assert [p.id for p in runpod_sandbox.pods()] == [handle.pod_id]  # one pod, not two
    assert sleeps == [3.0]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "HTTP 429" in said[0] and "3 s" in said[0]


def test_a_call_past_its_deadline_is_transient(
    runpod_sandbox: RunPodSandbox, tmp_path: Path, sleeps: SleepRecorder
) -> None:
    runpod_sandbox.faults.latency_ms = 400
    cloud = RunPodGpuCloud(
        environ=runpod_sandbox.environ(),
        home=tmp_path,
        timeout_sec=0.05,
        attempts=2,
        sleep=sleeps,
    )
    with pytest.raises(Transient, match=r"within 0\.05 s"):
        cloud.gpu_prices(cloud_type="SECURE")
    assert len(sleeps) == 1
    runpod_sandbox.faults.latency_ms = 400
    with pytest.raises(CreateOutcomeUnknown, match=r"within 0\.05 s"):
        cloud.create_pod(request("slow"))


def test_a_rejected_key_is_one_line_about_the_key(
    runpod_sandbox: RunPodSandbox, tmp_path: Path
) -> None:
    cloud = RunPodGpuCloud(
        environ={**runpod_sandbox.environ(), "RUNPOD_API_KEY": "wrong"}, home=tmp_path
    )
    for call in (
        lambda: cloud.list_pods(),
        lambda: cloud.stop_pod("abc"),
        lambda: cloud.create_pod(request()),
    ):
        with pytest.raises(Unauthorized) as caught:
            call()
        message = str(caught.value)
        assert "401" in message and "RUNPOD_API_KEY" in message and "\n" not in message
    assert runpod_sandbox.pods() == []


def test_no_key_anywhere_is_one_line_and_nothing_is_sent(
    runpod_sandbox: RunPodSandbox, tmp_path: Path
) -> None:
    cloud = RunPodGpuCloud(environ={"RUNPOD_API_BASE_URL": runpod_sandbox.url}, home=tmp_path)
    with pytest.raises(Unauthorized, match="set RUNPOD_API_KEY"):
        cloud.gpu_prices(cloud_type="SECURE")
    assert runpod_sandbox.received == [] and runpod_sandbox.received_v2 == []


def test_the_key_comes_from_the_sdk_config_file_when_the_variable_is_unset(
    runpod_sandbox: RunPodSandbox, tmp_path: Path
) -> None:
    config = tmp_path / ".runpod" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[default]\napi_key = "{runpod_sandbox.api_key}"\n')
    cloud = RunPodGpuCloud(environ={"RUNPOD_API_BASE_URL": runpod_sandbox.url}, home=tmp_path)
    assert cloud.gpu_prices(cloud_type="SECURE")["NVIDIA RTX A4000"] == 0.25


def test_an_unreachable_api_is_unreachable_even_for_create(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cloud = RunPodGpuCloud(
        environ={"RUNPOD_API_KEY": "k", "RUNPOD_API_BASE_URL": f"http://127.0.0.1:{port}"},
        home=tmp_path,
        sleep=lambda s: None,
    )
    with pytest.raises(
        Unreachable, match=f"cannot reach the RunPod API at http://127.0.0.1:{port}"
    ):
        cloud.list_pods()
    with pytest.raises(Unreachable):  # the request never left: no pod can exist
        cloud.create_pod(request())


def test_spot_bids_the_spot_price_over_graphql_said_in_one_line(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        handle = runpod_cloud.create_pod(request(spot=True, gpu_count=2))
    said = [r.getMessage() for r in caplog.records if "GraphQL" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("[runpod] pod.spot:")
    assert [q.text.split("(")[0] for q in runpod_sandbox.received] == [
        "query GpuTypes { gpuTypes",  # the bid
        "mutation { podRentInterruptable",
    ]
    pod = runpod_sandbox.pod(handle.pod_id)
    assert pod is not None and pod.spot and pod.gpu_count == 2
    assert runpod_cloud.get_pod(handle.pod_id).cost_per_hour_usd == pytest.approx(2 * 0.12)
    assert runpod_cloud.gpu_prices(cloud_type="SECURE", spot=True)[A4000] == 0.12


def test_a_network_volume_pins_its_datacenter(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    volume = runpod_cloud.network_volume("pid-workspace-100gb")
    assert volume == NetworkVolume("nv-pidws100", "pid-workspace-100gb", "EU-RO-1", 100)
    handle = runpod_cloud.create_pod(request(network_volume_id="nv-pidws100", volume_gb=None))
    status = runpod_cloud.get_pod(handle.pod_id)
    assert status.datacenter_id == "EU-RO-1" and status.volume_gb is None
    with pytest.raises(NoCapacity, match=r"EU-RO-1.*\(HTTP 400\)"):  # v2: a 400 is "try the next"
        runpod_cloud.create_pod(request("elsewhere", dc="US-TX-3", network_volume_id="nv-pidws100"))


def test_an_unknown_gpu_is_a_400_that_walks_on_with_runpods_detail(
    runpod_cloud: RunPodGpuCloud,
) -> None:
    # v2 answers a rule violation and a stock-out alike (400, no machine-readable code): the
    # walk moves on, and the detail names the GPU (createPod in openapi.json).
    with pytest.raises(NoCapacity, match=r"Unknown GPU type: NVIDIA Imaginary 9000 \(HTTP 400\)"):
        runpod_cloud.create_pod(request(gpu="NVIDIA Imaginary 9000"))


def test_two_volumes_with_one_name_are_ambiguous_and_ids_still_resolve(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    runpod_sandbox.catalog.network_volumes.append(
        SandboxVolume("nv-second", "pid-workspace-100gb", 50, "US-TX-3")
    )
    with pytest.raises(AmbiguousVolume, match="nv-pidws100 in EU-RO-1, nv-second in US-TX-3"):
        runpod_cloud.network_volume("pid-workspace-100gb")
    found = runpod_cloud.network_volume("nv-second")
    assert found is not None and found.datacenter_id == "US-TX-3"
    assert runpod_cloud.network_volume("no-such-volume") is None


def test_a_running_pod_reports_when_it_started(
    runpod_cloud: RunPodGpuCloud,
) -> None:
    handle = runpod_cloud.create_pod(request())
    running = runpod_cloud.get_pod(handle.pod_id)
    assert running.created_at is not None and abs(running.created_at - time.time()) < 120
    assert running.stopped_at is None
    runpod_cloud.stop_pod(handle.pod_id)
    stopped = runpod_cloud.get_pod(handle.pod_id)
    assert stopped.created_at is None and stopped.stopped_at is None  # v2 has no stop time


def test_cloud_all_creates_in_the_cloud_that_has_the_gpu(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    import json

    runpod_cloud.create_pod(request("all", cloud_type="ALL"))  # v2 has no ALL: a cloud is named
    (create,) = [r for r in runpod_sandbox.received_v2 if r.operation_id == "createPod"]
    assert json.loads(create.body)["cloud"] == "SECURE"


def test_a_listed_stopped_pod_says_when_it_stopped_from_its_billing(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    handle = runpod_cloud.create_pod(request())
    assert wait_for(runpod_cloud, handle.pod_id, ready=True).ready
    time.sleep(0.05)  # some compute to bill
    runpod_cloud.stop_pod(handle.pod_id)
    (listed,) = runpod_cloud.list_pods()
    # v2's Pod has no stop time; its last hour of compute in /v2/billing/pods ends after it.
    assert listed.desired_status == POD_EXITED and listed.stopped_at is not None
    assert time.time() - 3600 <= listed.stopped_at <= time.time()
    billing = [r for r in runpod_sandbox.received_v2 if r.operation_id == "listPodBilling"]
    assert len(billing) == 1
    # A running pod needs no billing read; find_pods (a create's recovery) never reads it.
    runpod_cloud.find_pods(name="run-1")
    assert len([r for r in runpod_sandbox.received_v2 if r.operation_id == "listPodBilling"]) == 1


def test_a_failed_billing_read_leaves_the_age_unknown_not_the_listing_failed(
    runpod_sandbox: RunPodSandbox, runpod_cloud: RunPodGpuCloud
) -> None:
    handle = runpod_cloud.create_pod(request())
    runpod_cloud.stop_pod(handle.pod_id)
    runpod_sandbox.faults.http_503["listPodBilling"] = 10
    (listed,) = runpod_cloud.list_pods()
    assert listed.pod_id == handle.pod_id and listed.stopped_at is None
